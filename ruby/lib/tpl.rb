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
    def self.from_tpl(status, message, file, line, column, source_line, formatted)
      cls = STATUS.fetch(status, Error)
      cls.new(message, status: status, file: file, line: line.zero? ? nil : line,
                       column: column.zero? ? nil : column, source_line: source_line, formatted: formatted)
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

  Error::STATUS = { 1 => SyntaxError, 2 => NameError, 3 => TypeError, 4 => LimitError, 5 => RaisedError,
                    6 => ValueError, 7 => StateError, 64 => UsageError, 65 => IOError, 66 => Error,
                    67 => CorruptError }.freeze

  SYNTAXES = { jinja: 0, erb: 1, fmt: 2 }.freeze
  EXTENSIONS = { ".jinja" => :jinja, ".j2" => :jinja, ".erb" => :erb, ".fmt" => :fmt, ".txt" => :fmt }.freeze

  # Render limits (0 = the default): fuel (instructions, 20,000,000), max_depth (200),
  # max_output (bytes, 64 MiB), max_memory (bytes, 256 MiB).
  Limits = Struct.new(:fuel, :max_depth, :max_output, :max_memory, keyword_init: true) do
    def to_a = [fuel || 0, max_depth || 0, max_output || 0, max_memory || 0]

    # [fuel, max_depth, max_output, max_memory] from a Limits or a Hash (used by the extension)
    def self.coerce(l) = (l.is_a?(Hash) ? new(**l) : l).to_a
  end

  # A compiled template: immutable, renders from many threads at once.
  class Template
    COMPILE_OPTIONS = %i[trim_blocks lstrip_blocks keep_trailing_newline strict tidy lang erb_self].freeze
    RENDER_OPTIONS = %i[facts call lang catalogs tr_keys].freeze

    # src: the template text; syntax: :jinja (default), :erb or :fmt; profile: "jinja2",
    # "pinecall" or "hf" (nil: the syntax's defaults); name: for messages; loader: a callable
    # name -> String or nil (include/import/extends); options: trim_blocks, lstrip_blocks,
    # keep_trailing_newline, strict, tidy, lang (the program's bound language).
    def initialize(src, syntax: :jinja, profile: nil, name: nil, loader: nil, **options)
      code = SYNTAXES[syntax.to_sym] or raise ArgumentError, "unknown syntax #{syntax.inspect} (:jinja, :erb or :fmt)"
      bad = options.keys - COMPILE_OPTIONS
      raise ArgumentError, "unknown option#{bad.size > 1 ? 's' : ''} #{bad.map(&:inspect).join(', ')}" unless bad.empty?
      loader = loader.method(:call) if loader && !loader.respond_to?(:call)
      _compile(src.to_str, name&.to_s || "<template>", code, profile&.to_s, options.empty? ? nil : options, loader)
    end

    # Compiles a file; the syntax comes from its extension unless given.
    def self.from_file(path, syntax: nil, name: nil, **kw)
      path = path.to_s
      syntax ||= EXTENSIONS[File.extname(path)] or raise ArgumentError, "cannot tell the syntax of #{path}: pass syntax:"
      new(File.read(path, encoding: "UTF-8"), syntax: syntax, name: name || path, **kw)
    end

    # A program from .tplb bytes (Template#save), verified before use.
    def self.load(bytes, name: nil)
      allocate.tap { |t| t.send(:_load, bytes.to_str, name&.to_s) }
    end

    # render(state = nil, facts:, call:, lang:, catalogs:, tr_keys:, limits:, &remembers) is in
    # the extension: a Hash of variables (Symbol or String keys; only the names in #reads are
    # looked up) or the variables as keywords; facts: [String] (remembered facts), call:
    # {channel:, medium:, claimed:}, lang:, catalogs: [JSON String or Hash], tr_keys: [name],
    # limits: Limits or {fuel:, ...}; a block answers remembers(words) instead of facts.

    # Renders an ERB template with `self` (Tpl::ERB#result): state is a Binding or a Hash.
    def render_with_self(state, receiver, limits: nil, **opts, &remembers)
      limits = Limits.new(**limits) if limits.is_a?(Hash)
      _render(state, receiver, opts.empty? ? nil : opts, remembers, limits&.to_a)
    end
  end

  # Ruby's ERB API over tpl: ERB.new(src, trim_mode: "-") → Tpl::ERB.new(src, trim_mode: "-").
  # result(binding) reads the binding's local variables, and its receiver's instance variables
  # and methods (private ones too, as a receiver-less call in Ruby); result_with_hash(h) renders
  # with h's keys as local variables and the top-level object as self. Only trim_mode "-" is
  # supported (tpl's ERB dialect, DESIGN.md §2); any other is an ArgumentError naming it.
  class ERB
    attr_reader :template
    attr_accessor :filename, :lineno

    def initialize(src, trim_mode: nil, eoutvar: "_erbout", filename: nil)
      unless trim_mode == "-"
        raise ArgumentError, "Tpl::ERB supports trim_mode \"-\" only, not #{trim_mode.inspect}"
      end
      @src = src
      @filename = filename
      @lineno = 0
      @eoutvar = eoutvar
      @template = Template.new(src, syntax: :erb, name: filename || "(erb)", erb_self: true)
    end

    def result(b = TOPLEVEL_BINDING)
      @template.__send__(:_render, b, b.receiver, nil, nil, nil)
    end

    def result_with_hash(hash)
      @template.__send__(:_render, hash, TOPLEVEL_BINDING.receiver, nil, nil, nil)
    end

    # ERB#run: prints the result.
    def run(b = TOPLEVEL_BINDING)
      print result(b)
    end

    def self.version = VERSION
  end
end
