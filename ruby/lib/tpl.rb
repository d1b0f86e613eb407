# frozen_string_literal: true

# tpl: compile Jinja2, ERB and str.format prompt templates to bytecode and render them
# byte-identically to the reference engines, from Ruby (issue 20).
#
#   require "tpl"
#   t = Tpl::Template.new("Hello <%= user[:name] %>!", syntax: :erb)
#   t.render(user: { name: "Ann" })                    # => "Hello Ann!"
#   Tpl::ERB.new(src, trim_mode: "-").result(binding)   # stdlib ERB's API
#
# Values cross natively (Hash in insertion order, Array, String, Symbol, Integer, Float,
# true/false/nil, Range); any other object is read lazily through respond_to? + public_send,
# [] and each. See README.md, "Ruby".
begin
  require "tpl/tpl_ext"
rescue LoadError
  require "tpl_ext" # the build tree: tpl_ext.so on the load path (RUBYLIB=build/ruby)
end

module Tpl
  VERSION = "0.1.0"

  # A template failed to compile, load or render. status (tpl_status), file, line, column
  # (1-based, code points; nil when unknown), source_line, formatted (FILE:LINE:COL: error: ...
  # with the source line and a caret). The message is the formatted text.
  class Error < StandardError
    attr_reader :status, :file, :line, :column, :source_line, :formatted, :reason
    # The exception Ruby raises for this error's kind ("NoMethodError", "KeyError", ...; "" for
    # tpl's own: limits, API and file errors) — include/tpl_errors.def, tpl_error_exception.
    attr_accessor :exception_name

    def initialize(message = nil, status: 0, file: nil, line: nil, column: nil, source_line: nil, formatted: nil)
      super(formatted && !formatted.empty? ? formatted.chomp : message)
      @reason = message
      @status = status
      @file = file
      @line = line
      @column = column
      @source_line = source_line
      @formatted = formatted
    end

    # Builds the exception for a tpl_error record (called by the extension).
    def self.from_tpl(status, message, file, line, column, source_line, formatted, exception = "")
      cls = STATUS.fetch(status, Error)
      fine = EXCEPTIONS[exception]
      cls = fine if fine && fine < cls
      e = cls.new(message, status: status, file: file, line: line.zero? ? nil : line,
                           column: column.zero? ? nil : column, source_line: source_line, formatted: formatted)
      e.exception_name = exception
      e
    end
  end

  class SyntaxError < Error; end     # does not parse, or a construct tpl refuses (1)
  class NameError < Error; end       # undefined name (strict, or Ruby's NameError in ERB) (2)
  class TypeError < Error; end       # wrong types, int64 overflow, 1/0, NoMethodError (3)
  class LimitError < Error; end      # fuel, depth, output or memory limit (4)
  class RaisedError < Error; end     # raise_exception(), a host function failed (5)
  class ValueError < Error; end      # bad argument value (6)
  class StateError < Error; end      # bad render state (7)
  class UsageError < Error; end      # bad API use (64)
  class IOError < Error; end         # a file (65)
  class CorruptError < Error; end    # a .tplb failed verification (67)

  # Ruby's classes for the finer kinds (issue 16), each under the class of its status, so a
  # rescue of the status class still catches it.
  class NoMethodError < TypeError; end       # undefined method (Ruby's NoMethodError)
  class ZeroDivisionError < TypeError; end   # 1 / 0
  class FrozenError < TypeError; end         # a frozen String modified
  class RangeError < TypeError; end          # a number out of range (RangeError)
  class FloatDomainError < RangeError; end   # NaN or Infinity to an Integer
  class ArgumentError < ValueError; end      # wrong argument count or value
  class IndexError < ValueError; end         # an index out of range (fetch, ...)
  class KeyError < IndexError; end           # Hash#fetch of a missing key
  class StopIteration < IndexError; end      # an iteration past its end
  class RegexpError < ValueError; end        # a bad regular expression

  Error::EXCEPTIONS = %w[NoMethodError ZeroDivisionError FrozenError RangeError FloatDomainError ArgumentError
                         IndexError KeyError StopIteration RegexpError].to_h { |n| [n, const_get(n)] }.freeze

  Error::STATUS = { 1 => SyntaxError, 2 => NameError, 3 => TypeError, 4 => LimitError, 5 => RaisedError,
                    6 => ValueError, 7 => StateError, 64 => UsageError, 65 => IOError, 66 => Error,
                    67 => CorruptError }.freeze

  SYNTAXES = { jinja: 0, erb: 1, fmt: 2 }.freeze

  # The code of a syntax: given as a Symbol or String (:jinja, :erb, :fmt); another name is an
  # ::ArgumentError, another type a ::TypeError.
  def self.syntax_code(syntax)
    unless syntax.is_a?(Symbol) || syntax.is_a?(String)
      raise ::TypeError, "syntax must be a Symbol (:jinja, :erb or :fmt), not #{syntax.class}"
    end
    SYNTAXES[syntax.to_sym] or raise ::ArgumentError, "unknown syntax #{syntax.inspect} (:jinja, :erb or :fmt)"
  end
  EXTENSIONS = { ".jinja" => :jinja, ".j2" => :jinja, ".erb" => :erb, ".fmt" => :fmt, ".txt" => :fmt }.freeze

  # Render limits (0 = the default): fuel (instructions, 20,000,000), max_depth (200),
  # max_output (bytes, 64 MiB), max_memory (bytes, 256 MiB).
  Limits = Struct.new(:fuel, :max_depth, :max_output, :max_memory, keyword_init: true) do
    def to_a = Limits.check([fuel || 0, max_depth || 0, max_output || 0, max_memory || 0])

    # vals ([fuel, max_depth, max_output, max_memory]) when each is an Integer in its range, else
    # an ::ArgumentError naming it
    def self.check(vals)
      vals.zip(members, [2**64 - 1, 2**32 - 1, 2**64 - 1, 2**64 - 1]) do |v, name, top|
        next if v.is_a?(Integer) && v.between?(0, top)

        raise ::ArgumentError, "Tpl::Limits: #{name} must be an Integer between 0 (the default) and #{top}, not #{v.inspect}"
      end
      vals
    end

    # [fuel, max_depth, max_output, max_memory] from a Limits, a Hash or such an Array (used by the extension)
    def self.coerce(l)
      a = case l
          when Hash then new(**l).to_a
          when Limits, Array then l.to_a
          else raise ::TypeError, "limits must be a Tpl::Limits, a Hash or an Array, not #{l.class}"
          end
      a.length == 4 ? check(a) : a
    end
  end

  # A compiled template: immutable and frozen, renders from many threads at once and is
  # Ractor-shareable (Ractor.make_shareable / pass it to Ractor.new).
  class Template
    COMPILE_OPTIONS = %i[trim_blocks lstrip_blocks keep_trailing_newline strict tidy lang erb_self erb_encoding].freeze
    RENDER_OPTIONS = %i[facts call lang catalogs tr_keys].freeze

    # src: the template text; syntax: :jinja (default), :erb or :fmt; profile: "jinja2",
    # "pinecall" or "hf" (nil: the syntax's defaults); name: for messages; loader: a callable
    # name -> String or nil (include/import/extends); options: trim_blocks, lstrip_blocks,
    # keep_trailing_newline, strict, tidy, lang (the program's bound language).
    def initialize(src, syntax: :jinja, profile: nil, name: nil, loader: nil, **options)
      code = Tpl.syntax_code(syntax)
      bad = options.keys - COMPILE_OPTIONS
      raise ::ArgumentError, "unknown option#{bad.size > 1 ? 's' : ''} #{bad.map(&:inspect).join(', ')}" unless bad.empty?
      if loader && !loader.respond_to?(:call)
        raise ::TypeError, "loader must respond to call (name -> String or nil), not #{loader.class}"
      end
      # src: a String (or to_str), checked by the extension: a TypeError otherwise, as String#+ raises
      _compile(src, name&.to_s || "<template>", code, profile&.to_s, options.empty? ? nil : options, loader)
      freeze
    end

    # Compiles a file; the syntax comes from its extension unless given.
    def self.from_file(path, syntax: nil, name: nil, **kw)
      path = File.path(path) # a String or Pathname, as File.read takes: a TypeError otherwise
      syntax ||= EXTENSIONS[File.extname(path)] or raise ::ArgumentError, "cannot tell the syntax of #{path}: pass syntax:"
      new(File.read(path, encoding: "UTF-8"), syntax: syntax, name: name || path, **kw)
    end

    # A program from .tplb bytes (Template#save), verified before use.
    def self.load(bytes, name: nil)
      allocate.tap { |t| t.send(:_load, bytes, name&.to_s) }.freeze # bytes: a TypeError unless a String
    end

    # render(state = nil, facts:, call:, lang:, catalogs:, tr_keys:, limits:, &remembers) is in
    # the extension: a Hash of variables (Symbol or String keys; only the names in #reads are
    # looked up) or the variables as keywords; facts: [String] (remembered facts), call:
    # {channel:, medium:, claimed:}, lang:, catalogs: [JSON String or Hash], tr_keys: [name],
    # limits: Limits or {fuel:, ...}; a block answers remembers(words) instead of facts.
    # render_facts(state, facts = nil, &remembers), also in the extension: render(state, facts:
    # facts) with the facts passed positionally, which spares the keyword Hash Ruby makes for
    # every call given keywords (the per-render hot path of a view rendered with its facts).

    # Renders an ERB template with `self` (Tpl::ERB#result): state is a Binding or a Hash.
    def render_with_self(state, receiver, limits: nil, **opts, &remembers)
      limits = Limits.new(**limits) if limits.is_a?(Hash)
      _render(state, receiver, opts.empty? ? nil : opts, remembers, limits&.to_a)
    end
  end

  # Ruby's ERB API over tpl (erb 2.2.3, Ruby 3.1): ERB.new(src, trim_mode: "-") →
  # Tpl::ERB.new(src, trim_mode: "-"). result(binding) reads the binding's local variables, and
  # its receiver's instance variables and methods (private ones too, as a receiver-less call in
  # Ruby); result_with_hash(h) renders with h's keys as local variables and the top-level object
  # as self. Trim modes are read as ERB reads them: "-" is tpl's ERB dialect (DESIGN.md §2); nil
  # (or 0) is the same scan when the template has no "<%-" and no "-%>", else an ArgumentError;
  # "%", ">" and "<>" are an ArgumentError naming the mode. An error is raised as the class Ruby's
  # ERB raises (::SyntaxError, ::NameError, ...; see Tpl::ERB::Error). What Tpl::ERB does
  # not provide is a NotImplementedError naming it (#src: tpl compiles to bytecode, not Ruby).
  class ERB
    attr_reader :template, :filename, :lineno, :encoding

    # How ERB 2.2.3 reads a trim mode (ERB::Compiler#prepare_trim_mode): [percent, mode], with
    # its warning for a mode it does not know.
    def self.trim_mode_of(mode)
      unless mode.nil? || [0, 1, 2].include?(mode) || (mode.is_a?(String) && mode.match?(/\A(%|-|>|<>){1,2}\z/))
        warn "Invalid ERB trim mode: #{mode.inspect} (trim_mode: nil, 0, 1, 2, or String composed of '%' and/or '-', '>', '<>')", uplevel: 3
      end
      case mode
      when 1 then [false, ">"]
      when 2 then [false, "<>"]
      when String
        [mode.include?("%"), mode.include?("-") ? "-" : mode.include?("<>") ? "<>" : mode.include?(">") ? ">" : nil]
      else [false, nil] # 0, nil, and what ERB does not know
      end
    end

    # The encoding ERB gives the template: its magic comment's, else the String's (as
    # ERB::Compiler#detect_magic_comment reads it: leading <%# %> tags, greedy within a line).
    def self.magic_encoding(src)
      enc = src.encoding
      src.b.scan(/\G<%#(.*)%>/n) do
        comment = $1
        comment = $1 if comment[/-\*-\s*(.*?)\s*-*-$/n]
        enc = Encoding.find($1.sub(/-(?:mac|dos|unix)/i, "")) if comment =~ /coding\s*[=:]\s*([[:alnum:]\-_]+)/n
      end
      enc
    end

    # A template in trim mode (percent, mode) other than "-" written as the trim_mode "-" template
    # that scans to the same texts, tags and dropped newlines: stdlib ERB's scanner
    # (ERB::Compiler::Scanner, as ERB::Compiler#compile drives it) reads it. Lines are kept (a
    # dropped newline is "<%#-%>\n"); columns in messages may move by an escape.
    # __ENCODING__ in the code of a template in encoding enc (not UTF-8): enc's name as a String
    # literal, as tpl compiles it in a UTF-8 template ("UTF-8": tpl has no Encoding objects;
    # printed, both are the name ERB prints) — outside String literals and comments, padded to
    # keep the columns after it (a name longer than 10 bytes moves them)
    def self.name_encoding(src, enc)
      return src unless src.b.include?("__ENCODING__")

      lit = enc.name.inspect.ljust(12)
      code = /"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'|#[^\n]*|\b__ENCODING__\b/n
      src.b.gsub(/<%(?![%#])(.*?)%>/mn) do
        tag = $&
        tag.gsub(code) { |m| m == "__ENCODING__" ? lit : m }
      end.force_encoding(src.encoding)
    end

    def self.as_dash(src, percent, mode)
      require "erb"
      scanner = ::ERB::Compiler::Scanner.make_scanner(src.dup, mode, percent)
      out = String.new(encoding: src.encoding)
      text = String.new(encoding: src.encoding)
      content = nil
      flush = lambda do # text as "-" reads it: "<%" escaped, "-%>" split by an empty comment
        out << text.gsub("<%", "<%%").gsub("-%>", "-<%#%>%>")
        text.clear
      end
      guard = lambda do |stag, body| # a tag's content as "-" reads it back
        body = body.gsub("%>", "%%>")
        body = " #{body}" if stag == "<%" && (body.empty? || body.match?(/\A[-%=#]/))
        body.end_with?("-", "%") ? "#{body} " : body
      end
      tag = ->(stag, body) { out << stag << guard.call(stag, body) << "%>" }
      scanner.scan do |token|
        next if token.nil? || token == ""
        if scanner.stag.nil?
          case token
          when ::ERB::Compiler::PercentLine
            flush.call
            code = token.to_s
            code.start_with?("#") ? tag.call("<%#", code[1..]) : tag.call("<%", code)
            out << "<%#-%>\n"
          when :cr then flush.call; out << "<%#-%>\n"
          when "<%", "<%=", "<%#" then flush.call; scanner.stag = token; content = String.new(encoding: src.encoding)
          when "<%%" then text << "<%"
          else text << token
          end
        else
          case token
          when "%>" then tag.call(scanner.stag, content); scanner.stag = nil; content = nil
          when "%%>" then content << "%>"
          else content << token
          end
        end
      end
      flush.call
      # a tag left open (ERB puts its content as text): tpl's located error, as with "-"
      out << scanner.stag << guard.call(scanner.stag, content) if scanner.stag
      # the written template must scan to the same texts and code (else the mode is refused):
      # escapes next to ERB's own (e.g. "<%%" and "%%>" within a tag) can read otherwise
      # (a tag left open, its content aside: tpl's located error either way)
      same = [erb_items(out, false, "-"), erb_items(src, percent, mode)].map { |i| i.map { _1[0] == :open ? :open : _1 } }.uniq.size == 1
      return out if same

      raise ::ArgumentError, "Tpl::ERB: this template in trim_mode #{ERB.trim_mode_name(percent, mode)} has a tag or escape " \
                             "tpl cannot express in its trim_mode \"-\""
    end

    def self.trim_mode_name(percent, mode) = "#{percent ? "%" : ""}#{mode}".then { |m| m.empty? ? "nil" : m.inspect }

    # What ERB's compiler makes of src in a trim mode: its texts (joined) and tags (kind and
    # content without surrounding blanks; comments and Ruby comment lines left out), in order.
    def self.erb_items(src, percent, mode)
      items = []
      scanner = mode == "-" && !percent ? ::ERB::Compiler::TrimScanner.new(src.dup, "-", false) :
                  ::ERB::Compiler::Scanner.make_scanner(src.dup, mode, percent)
      text = +""
      content = nil
      code = lambda do |stag, body|
        body = body.strip
        next if stag == "<%#" || (body.start_with?("#") && !body.include?("\n"))
        items << [:text, text.dup] unless text.empty?
        text.clear
        items << [stag, body]
      end
      scanner.scan do |token|
        next if token.nil? || token == ""
        if scanner.stag.nil?
          case token
          when ::ERB::Compiler::PercentLine then code.call("<%", token.to_s)
          when :cr then nil
          when "<%", "<%=", "<%#" then scanner.stag = token; content = +""
          when "<%%" then text << "<%"
          else text << token
          end
        else
          case token
          when "%>" then code.call(scanner.stag, content); scanner.stag = nil
          when "%%>" then content << "%>"
          else content << token
          end
        end
      end
      items << [:text, text] unless text.empty?
      items << [:open, scanner.stag, content] if scanner.stag
      items
    end

    NOT_GIVEN = Object.new
    private_constant :NOT_GIVEN

    # ERB.new(str, trim_mode: nil, eoutvar: "_erbout"), and its deprecated positional form
    # (str, safe_level, trim_mode, eoutvar) with ERB's warnings; filename: is tpl's (messages).
    def initialize(src, safe_level = NOT_GIVEN, legacy_trim_mode = NOT_GIVEN, legacy_eoutvar = NOT_GIVEN,
                   trim_mode: nil, eoutvar: "_erbout", filename: nil)
      unless safe_level.equal?(NOT_GIVEN)
        warn "Passing safe_level with the 2nd argument of ERB.new is deprecated. Do not use it, and specify other arguments as keyword arguments.", uplevel: 1
      end
      unless legacy_trim_mode.equal?(NOT_GIVEN)
        warn "Passing trim_mode with the 3rd argument of ERB.new is deprecated. Use keyword argument like ERB.new(str, trim_mode: ...) instead.", uplevel: 1
        trim_mode = legacy_trim_mode
      end
      unless legacy_eoutvar.equal?(NOT_GIVEN)
        warn "Passing eoutvar with the 4th argument of ERB.new is deprecated. Use keyword argument like ERB.new(str, eoutvar: ...) instead.", uplevel: 1
        eoutvar = legacy_eoutvar
      end
      if self.class.instance_method(:make_compiler).owner != ERB
        raise NotImplementedError, "#{self.class}#make_compiler: tpl has no ERB::Compiler to extend (its scanner is C)"
      end
      src = String.try_convert(given = src) or raise ::TypeError, "no implicit conversion of #{given.class} into String"
      @encoding = check_encoding(src)
      percent, mode = ERB.trim_mode_of(trim_mode)
      # tpl compiles trim_mode "-"; nil scans as "-" but for "<%-" and "-%>" (with neither in
      # the text, the two scans are one); the other modes are read by ERB's own scanner
      @scan_src = if mode == "-" && !percent then src
                  elsif mode.nil? && !percent && !src.include?("<%-") && !src.include?("-%>") then src
                  else ERB.as_dash(src, percent, mode)
                  end
      # a template in another encoding: its non-ASCII text tagged (tpl_ext.c erb_tag), the result
      # untagged into the encoding ERB's buffer would end in
      @scan_src = ERB.name_encoding(@scan_src, @encoding) unless @encoding == Encoding::UTF_8
      @scan_src = Tpl._erb_tag(@scan_src, @encoding) unless @encoding == Encoding::UTF_8 || @scan_src.b.ascii_only?
      refuse_eoutvar(@scan_src, eoutvar)
      @src = src
      @eoutvar = eoutvar
      @filename = filename
      @lineno = 0
      @template = compile
    end

    def filename=(name)
      @filename = name
      @template = compile
    end

    # Added to the line of a render error's location (ERB adds it to the backtrace's).
    def lineno=(n)
      @lineno = Integer(n)
    end

    def location=((filename, lineno))
      self.filename = filename
      self.lineno = lineno if lineno
    end

    # result(b = TOPLEVEL_BINDING) and result_with_hash(hash) are in the extension (tpl_ext.c
    # erb_result_m: no Ruby frame, check or __send__ per render): result renders with b's local
    # variables and its receiver as self; result_with_hash with hash's keys as the template's
    # local variables — Symbols or Strings that name one (else the TypeError or NameError of
    # Binding#local_variable_set, as ERB raises it) — and the top-level object as self. An
    # exception that ends the render leaves through #located.

    # ERB#run: prints the result.
    def run(b = TOPLEVEL_BINDING)
      print result(b)
    end

    # Defines the method methodname (a name, with a parameter list if any: "render(a, b = 1)")
    # in mod, rendering the template with the method's arguments as local variables and its
    # receiver as self, as ERB#def_method does. The file name is for messages.
    def def_method(mod, methodname, fname = "(ERB)")
      erb = fname == (@filename || "(erb)") ? self : clone.tap { |e| e.filename = fname }
      name = methodname.to_s[/\A[^\s(]+/] or raise ::ArgumentError, "no method name in #{methodname.inspect}"
      # a method with methodname's parameters that returns its binding (Ruby checks the
      # arguments), in a module of its own: bound to mod's instances when called
      binder = Module.new.module_eval("def #{methodname}\nbinding\nend\ninstance_method(:#{name})", fname, -1)
      mod.__send__(:define_method, name) { |*args, **kw, &blk| erb.result(binder.bind_call(self, *args, **kw, &blk)) }
    end

    def def_module(methodname = "erb")
      mod = Module.new
      def_method(mod, methodname, @filename || "(ERB)")
      mod
    end

    def def_class(superklass = Object, methodname = "result")
      cls = Class.new(superklass)
      def_method(cls, methodname, @filename || "(ERB)")
      cls
    end

    # ERB's hook for a subclass's own compiler (ERB::Compiler); a subclass of Tpl::ERB that
    # overrides it is refused by new.
    def make_compiler(_trim_mode) = nil

    # ERB#src is the Ruby script ERB compiles the template to; tpl compiles it to bytecode.
    def src
      raise NotImplementedError, "Tpl::ERB#src: tpl compiles the template to bytecode, not to Ruby source " \
                                 "(Tpl::ERB#template.dump shows the program)"
    end

    # The version of the erb whose API this is (ERB.version: code that picks ERB.new's keyword or
    # positional form by it takes the keyword one, as with Ruby 3.1's erb); tpl's is Tpl::VERSION.
    ERB_VERSION = "2.2.3"
    def self.version = ERB_VERSION

    # ERB::Util: html_escape/h and url_encode/u, as in erb 2.2.3.
    module Util
      def html_escape(s)
        require "cgi/util" unless defined?(::CGI.escapeHTML) # as erb requires it; loaded when first used
        ::CGI.escapeHTML(s.to_s)
      end
      alias h html_escape
      module_function :h
      module_function :html_escape

      def url_encode(s)
        s.to_s.b.gsub(/[^a-zA-Z0-9_\-.~]/n) { |m| format("%%%02X", m.unpack1("C")) }
      end
      alias u url_encode
      module_function :u
      module_function :url_encode
    end

    # ERB::DefMethod#def_erb_method(methodname, erb_or_fname): a file name is read with
    # Tpl::ERB.new(File.read(fname)) (trim_mode nil, as ERB reads it).
    module DefMethod
      def def_erb_method(methodname, erb_or_fname)
        if erb_or_fname.is_a?(String)
          ERB.new(File.read(erb_or_fname)).def_method(self, methodname, erb_or_fname)
        else
          erb_or_fname.def_method(self, methodname, erb_or_fname.filename || "(ERB)")
        end
      end
      module_function :def_erb_method
    end

    # A compile or render error, raised as the class Ruby's ERB raises for it (an instance of
    # ::SyntaxError itself, ::NameError for an undefined name, ::NoMethodError, ::KeyError, ...:
    # include/tpl_errors.def's Ruby column) extended with this module: tpl's message and
    # fields. `rescue Tpl::NameError` (the class of the tpl error, #tpl_error) still catches
    # it: Tpl::Error.=== looks through this module. tpl's own kinds (limits) stay Tpl::Error.
    module Error
      attr_reader :tpl_error

      %i[status file column source_line formatted reason exception_name].each do |m|
        define_method(m) { @tpl_error.public_send(m) }
      end

      def line = @tpl_error.line && @tpl_error.line + @lineno

      # self_obj: the receiver of the binding a render error happened in (self_given false: a
      # compile error, no receiver)
      def self.convert(e, lineno, self_given = false, self_obj = nil)
        cls = CLASSES[e.exception_name] or return e
        msg = e.message
        msg = msg.sub(/\A(#{Regexp.escape(e.file.to_s)}):#{e.line}:/) { "#{$1}:#{e.line + lineno}:" } if lineno != 0 && e.line
        err = if cls <= ::NameError && (m = NAMING.match(e.reason.to_s))
                # Ruby's wording for the receiver: tpl names self "main:Object" (a bare name) and
                # a host object "INSPECT:Object" or "#INSPECT" (its inspect cut at 60 bytes); Ruby names
                # the binding's receiver by its inspect, without ":Class" when it starts with "#"
                name, said = m[1], m[2]
                self_insp = (self_obj.inspect rescue nil) if self_given
                # (since session 26 tpl leaves ":Object" off an inspect starting with "#", as Ruby)
                cut = self_insp.byteslice(0, 60) if self_insp.is_a?(String)
                is_self = self_given && (said == "main:Object" || (cut && (said == "#{cut}:Object" || (cut.start_with?("#") && said == cut))))
                text = if is_self then ERB.receiver_text(self_obj)
                       elsif said.start_with?("#") && said.end_with?(":Object") then said.delete_suffix(":Object")
                       end
                msg = msg.sub(" for #{said} (") { " for #{text} (" } if text && text != said
                if !is_self then cls.new(msg, name.to_sym)
                elsif cls <= ::NoMethodError then cls.new(msg, name.to_sym, [], true, receiver: self_obj) # (a private call: self's)
                else cls.new(msg, name.to_sym, receiver: self_obj)
                end
              else
                cls.new(msg)
              end
        err.extend(Error)
        err.instance_variable_set(:@tpl_error, e)
        err.instance_variable_set(:@lineno, lineno)
        err.set_backtrace(e.backtrace)
        err
      end
    end

    Error::NAMING = /\Aundefined (?:local variable or )?method `([^']+)' for (.*) \((?:NameError|NoMethodError)\)\z/m.freeze
    Error::CLASSES = %w[SyntaxError NameError NoMethodError TypeError ZeroDivisionError RangeError FloatDomainError FrozenError
                        RuntimeError ArgumentError KeyError IndexError StopIteration RegexpError IOError
                        SecurityError].to_h do |n|
      [n, Object.const_get(n)]
    end.freeze

    private

    # An error while rendering, located as ERB's is: the template's frame in the backtrace,
    # "FILE:LINE:in `METHOD'" (the file #filename=, the line with #lineno= added, the method the
    # binding's; ERB's frame is eval'd code, so it is the innermost one for an error of the
    # template's own, and under the frames of a method the template called that raised); a tpl
    # error is raised as the class ERB raises (Error.convert); a Ruby exception raised by a
    # method the template called keeps its class, its message's "(tpl: raised while rendering
    # ...)" line counted from #lineno too. Other exceptions (this method's own checks) pass.
    WHERE = /\(tpl: raised while rendering (.*), line (\d+), column (\d+)\)\z/m.freeze
    private_constant :WHERE

    # (called by the extension from #result or #result_with_hash, whose frame is the first of
    # caller's, as of the exception's backtrace: the template's frame goes above it)
    def located(e, b)
      if e.is_a?(Tpl::Error) && !e.is_a?(Error)
        err = Error.convert(e, @lineno, true, b.receiver)
        return err unless e.line

        err.set_backtrace(["#{e.file}:#{e.line + @lineno}:in `#{frame_label(b)}'"] + (err.backtrace || []))
        err
      elsif !e.is_a?(Error) && (bt = e.backtrace) && (m = WHERE.match(e.message.to_s)) &&
            (here = caller) && (i = bt.length - here.length) >= 0 && bt[i] == here[0]
        line = m[2].to_i + @lineno
        e = e.exception(e.message.sub(WHERE) { "(tpl: raised while rendering #{m[1]}, line #{line}, column #{m[3]})" }) if @lineno != 0
        e.set_backtrace(bt[0...i] + ["#{m[1]}:#{line}:in `#{frame_label(b)}'"] + bt[i..])
        e
      else
        e
      end
    end

    # Ruby 3.1's text for a NameError's receiver (error.c, name_err_mesg_to_str): its inspect
    # ("#<View:0x... @a=1>", "#<struct S a=1>"), followed by ":Class" unless it starts with "#"
    # ("main:Object", "nil:NilClass", "5:Integer"); Kernel#to_s when inspect fails
    def self.receiver_text(o)
      d = begin
        o.inspect
      rescue ::Exception # rubocop:disable Lint/RescueException (Ruby's rb_protect)
        nil
      end
      d = (::Kernel.instance_method(:to_s).bind_call(o) rescue "#<BasicObject>") unless d.is_a?(String)
      d.start_with?("#") ? d : "#{d}:#{::Kernel.instance_method(:class).bind_call(o)}"
    end

    # (a BasicObject's binding has no Kernel#__method__)
    def frame_label(b) = ((b.eval("::Kernel.__method__") rescue nil) || "<main>").to_s

    # ERB's output buffer is a Ruby String in a variable (eoutvar: "_erbout", or the name given)
    # that code in the template may read or append to; tpl writes the output itself. A tag's
    # code that names it (not in a comment tag) is refused when the template is made, not
    # rendered as something else (a NameError, or nil's NoMethodError for an @ivar).
    def refuse_eoutvar(src, name)
      return unless src.valid_encoding? && name.is_a?(String) && !name.empty?

      var = /(?<![\w@$])#{Regexp.escape(name)}(?![\w?!])/
      src.scan(/<%(?!%)(.*?)%>/m) do |(code)|
        next if code.start_with?("#") || !code.match?(var)

        raise NotImplementedError, "Tpl::ERB: the template uses ERB's output buffer #{name} (eoutvar) as a variable; " \
                                   "tpl writes the output itself, there is no Ruby String to read or append to"
      end
    end

    # The program; a compile error is Ruby's ::SyntaxError (ERB's, from #result), tpl's limits stay
    def compile
      Template.new(@scan_src, syntax: :erb, name: @filename || "(erb)", erb_self: true,
                              erb_encoding: @encoding == Encoding::UTF_8 ? nil : @encoding)
    rescue Tpl::Error => e
      raise Error.convert(e, @lineno)
    end

    # ERB's encoding for src: its magic comment's, else the String's; an ASCII-compatible one. A
    # template in another encoding than UTF-8 renders as ERB's does (its text and the values'
    # bytes as they are, the result in the encoding of the non-ASCII text, or
    # Encoding::CompatibilityError where String#<< raises it: tpl_ext.c erb_tag); its
    # `__ENCODING__` is its encoding's name (ERB.name_encoding), but its code may not call a
    # String's encoding methods (`.encoding`, `encode`, `force_encoding`, `valid_encoding?`: a
    # literal's would be UTF-8's in tpl, the template's in Ruby).
    def check_encoding(src)
      enc = ERB.magic_encoding(src)
      raise ::ArgumentError, "#{enc} is not ASCII compatible" if enc.dummy? || !enc.ascii_compatible?
      return enc if enc == Encoding::UTF_8

      code = src.b.scan(/<%(?![%#])(.*?)%>/mn).join("\n").gsub("__ENCODING__", "")
      if code.match?(/encod/i) # in code tags (not comments: magic comments, not text)
        raise ::ArgumentError, "Tpl::ERB: a #{enc} template that reads an encoding is not supported " \
                               "(tpl's strings are UTF-8; convert it: src.encode(\"UTF-8\"))"
      end
      enc
    end
  end

  class Error
    # rescue Tpl::NameError also catches Tpl::ERB's ::NameError for the same error (Tpl::ERB::Error)
    def self.===(other) = super || (other.is_a?(ERB::Error) && other.tpl_error.is_a?(self))
  end

  # A prompt store (include/tpl_store.h; README "Prompts as objects"): SQLite at a path, or
  # PostgreSQL at a "postgresql://..." URL (one registry for many hosts). Prompts are named,
  # versioned rows ("NAME", "NAME:N" or a row id) with translation rows in dictionaries. A handle
  # belongs to one thread or Ractor at a time. Rows are Hashes with the keys of
  # `tplc prompt show --json` as Symbols.
  #
  #   store = Tpl::Store.new("prompts.db")
  #   store.create("demo.hello", "Hello, {name}", syntax: :fmt, tr_keys: ["name"])
  #   store.tr_set("demo.hello", "Hello, {name}", "zz", "HEY, {name}")
  #   store.render("demo.hello", { name: "Ada" }, lang: "zz")   # => "HEY, Ada"
  class Store
    class Error < Tpl::Error; end     # the database failed (cannot open, corrupt, newer schema)
    class NotFound < Error; end       # no such prompt, version, row id or translation row

    # where: a file path (SQLite; its folder is created) or a postgresql:// URL; nil:
    # $TPL_STORE, else ./.tpl/store.db. With a block: yields the store and closes it.
    def self.open(where = nil)
      s = new(where)
      return s unless block_given?
      begin
        yield s
      ensure
        s.close
      end
    end

    def initialize(where = nil)
      where ||= ENV["TPL_STORE"]
      where = File.path(where) unless where.nil? # a path or URL String (or Pathname): a TypeError otherwise
      where = ".tpl/store.db" if where.nil? || where.empty?
      _open(where)
    end

    # Compiles src and stores it as the next version of name; returns the new row.
    def create(name, src, syntax: :fmt, profile: nil, tr_keys: [], lang: nil)
      code = Tpl.syntax_code(syntax)
      _create(name.to_s, src, code, profile&.to_s, Array(tr_keys), lang&.to_s)
    end

    # The latest active version of every name starting with prefix, by name.
    def list(prefix = nil) = _list(prefix&.to_s)

    # Every version of name, oldest first (removed ones with all: true).
    def versions(name, all: false) = _versions(name.to_s, all)

    # A translation row into the prompt name's own dictionary (or dict:); the prompt must exist.
    # With plural: and forms: a plural row of dictionary dict: (name's own without it).
    def tr_set(name, source, lang, target, dict: nil, plural: nil, forms: nil)
      if plural
        # the prompt must exist here too (a removed version counts, as for a plain row): one more
        # round trip, a NotFound naming it before anything is written
        _versions(name.to_s, true)
        _tr_set((dict || name).to_s, lang.to_s, source.to_s, target.to_s, plural.to_s, Array(forms).map(&:to_s))
      else
        _prompt_tr_set(name.to_s, dict&.to_s, lang.to_s, source.to_s, target.to_s)
      end
    end

    # The rows of a prompt's own and bound dictionaries (lookup order), or of dicts:.
    def tr_list(name = nil, lang: nil, dicts: nil)
      unless dicts
        raise ::ArgumentError, "give a prompt name or dicts:" unless name
        row = get(name.to_s)
        dicts = [row[:name]] + row[:dicts]
      end
      _tr_list(Array(dicts).map(&:to_s), lang&.to_s)
    end

    # gettext PO files (libgettextpo): import returns the rows set; export the rows written.
    def po_import(path, dict: nil) = _po_import(File.path(path), dict&.to_s)

    def po_export(path, lang:, name: nil, dicts: nil)
      unless dicts
        raise ::ArgumentError, "give name: or dicts:" unless name
        row = get(name.to_s)
        dicts = [row[:name]] + row[:dicts]
      end
      _po_export(Array(dicts).map(&:to_s), lang.to_s, File.path(path))
    end

    # The prompt ref names, ready to render (program from the cached .tplb, catalogs in lookup
    # order): a Tpl::Prompt, frozen and Ractor-shareable.
    def load(ref)
      template, catalogs, row = _load(ref.to_s, Template)
      Prompt.new(template, catalogs, row)
    end

    # load(ref).render(state, **options): one round trip to the store, then the render.
    def render(ref, state = nil, **options, &remembers) = load(ref).render(state, **options, &remembers)
  end

  # A stored prompt loaded for rendering (Tpl::Store#load): its Template, its dictionaries'
  # catalogs, tr_keys and bound language, and its row.
  class Prompt
    attr_reader :template, :catalogs, :row

    def initialize(template, catalogs, row)
      @template = template
      @catalogs = catalogs
      @row = Ractor.make_shareable(row)
      freeze
    end

    # Renders as Template#render with the prompt's catalogs and tr keys; the language is lang:,
    # else the prompt's bound one, else $TPL_LANG, else none (tr() returns the source text).
    def render(state = nil, lang: nil, catalogs: nil, tr_keys: nil, **options, &remembers)
      lang ||= @row[:lang] || ENV["TPL_LANG"]
      lang = nil if lang&.empty?
      opts = { catalogs: @catalogs + Array(catalogs), tr_keys: @row[:tr_keys] + Array(tr_keys) }
      opts[:lang] = lang if lang
      limits = options.delete(:limits)
      opts.merge!(options)
      state ||= {}
      if limits
        @template.render_with_self(state, nil, limits: limits, **opts, &remembers)
      else
        @template.__send__(:_render, state, nil, opts, remembers, nil)
      end
    end
  end

  # A page (include/tpl_page.h, DESIGN.md §8): blocks, static then dynamic, loaded from a folder
  # with page.json; a static block provably reads only call.channel and call.medium. Immutable
  # and frozen (Ractor-shareable); each conversation renders through its own Page::Call.
  #
  #   page = Tpl::Page.load("examples/front-desk-page")
  #   call = page.call(channel: "phone")
  #   call.render({ stage: "greeting" }).blocks   # => [{name:, region:, text:, changed:, rendered:}, ...]
  class Page
    def self.load(dir) = allocate.tap { |p| p.send(:_load_dir, File.path(dir)) }.freeze

    # A new call (one conversation) of this page.
    def call(channel: nil, medium: nil, claimed: nil, resumed: nil, facts: nil, limits: nil)
      limits = Limits.new(**limits) if limits.is_a?(Hash)
      Call.allocate.tap do |c|
        c.send(:_start, self, limits&.to_a)
        c.set(channel: channel, medium: medium, claimed: claimed, resumed: resumed || false)
        c.set(facts: facts) if facts
      end
    end

    class Call
      # Sets any of: the call's channel and medium (nil: phone; text on whatsapp, else voice), its
      # claimed code, the resumed flag and the remembered facts (remembers(words)). What is not
      # given stays.
      def set(**kw)
        bad = kw.keys - %i[channel medium claimed resumed facts]
        raise ::ArgumentError, "unknown keyword#{bad.size > 1 ? 's' : ''}: #{bad.map(&:inspect).join(', ')}" unless bad.empty?
        @call ||= { channel: nil, medium: nil, claimed: nil, resumed: false }
        @call.merge!(kw.slice(:channel, :medium, :claimed, :resumed))
        _set(@call[:channel]&.to_s, @call[:medium]&.to_s, @call[:claimed]&.to_s, @call[:resumed]) unless (kw.keys - [:facts]).empty?
        _facts(Array(kw[:facts])) if kw.key?(:facts)
        self
      end

      # Renders one step of the call with state (a Hash, or a JSON object text) over the page's
      # defaults: blocks whose reads changed are rendered again. Returns self.
      def render(state = {}, facts: nil)
        _facts(Array(facts)) if facts
        unless state.is_a?(String)
          require "json"
          state = JSON.generate(state)
        end
        _render(state)
      end
    end
  end
end
