# Tpl::ERB against Ruby's own ERB in the same process: byte-equal outputs for the same binding
# (locals, instance variables and methods of self, blocks, helpers), result_with_hash, trim
# modes, errors, threads, and no leaks (issue 20).
require "minitest/autorun"
require "erb"
require "tpl"
require_relative "helper"

# A top-level helper: a private method of Object, so ERB templates of any binding call it.
def shout(s) = "#{s.upcase}!"

class TestERB < Minitest::Test
  include TplTestHelper

  Slot = Struct.new(:day, :time) do
    def label = "#{day} at #{time}"
  end

  class Agent
    attr_reader :clinic

    def initialize(stage)
      @stage = stage
      @clinic = { "name" => "Sunny Dental", "city" => "Lyon" }
      @patient = stage == "identify" ? nil : { name: "Ann Lee", dob: "1990-01-02", new: stage == "book" }
      @slots = [Slot.new("Mon", "9:00"), Slot.new("Tue", "14:30")]
      @memory = ["prefers mornings"]
      @count = 3
    end

    def remembers?(x) = @memory.any? { |m| m.include?(x) }
    def greet(name, punct: "!") = "Hello, #{name}#{punct}"
    def slot_count = @slots.size

    def both_in(src, mode)
      local_note = "call back"
      items = %w[alpha beta gamma]
      n = 2
      b = binding
      # each result, or the class of what it raised (a Ruby error of the template: NameError, SyntaxError)
      [ERB, Tpl::ERB].map do |k|
        k.new(src, trim_mode: mode).result(b)
      rescue NameError, SyntaxError => x
        x.is_a?(NameError) ? NameError : SyntaxError
      end
    end

    def both(src)
      local_note = "call back"
      items = %w[alpha beta gamma]
      n = 2
      b = binding
      [ERB.new(src, trim_mode: "-").result(b), Tpl::ERB.new(src, trim_mode: "-").result(b)]
    end

    private

    def secret = "s3cret"
  end

  TEMPLATES = {
    "ivars" => "Clinic: <%= @clinic['name'] %> (<%= @clinic[\"city\"] %>), stage <%= @stage %>\n",
    "locals" => "<%= local_note %> <%= n * 3 %> <%= items.first %> <%= items.size %>",
    "methods" => "<%= greet('Ann') %> <%= greet(\"Bo\", punct: '?') %> <%= slot_count %> <%= clinic['city'] %> <%= secret %>",
    "helper" => "<%= shout('hi') %> <%= shout(@stage) %>",
    "if" => <<~ERB,
      <% if @stage == "identify" -%>
      Ask for the name.
      <% elsif @stage == "book" -%>
      Book <%= @patient[:name] %> (new: <%= @patient[:new] %>).
      <% else -%>
      Other: <%= @patient.inspect %>
      <% end -%>
      done
    ERB
    "each" => <<~ERB,
      <% @slots.each_with_index do |s, i| -%>
        <%= i + 1 %>. <%= s.label %> / <%= s.day %>
      <% end -%>
      <% items.each do |it| -%>
      - <%= it.capitalize %>
      <% end -%>
    ERB
    "blocks" => "<%= items.map { |x| x.upcase }.join(', ') %>|<%= items.select { |x| x.include?('a') }.size %>|" \
                "<% @count.times do |i| %><%= i %><% end %>|<%= (1..4).map { |i| i * i }.inspect %>",
    "remembers" => "<% if remembers?('mornings') -%>\nMornings.\n<% end -%>\n<%= remembers?('dogs') %>",
    "strings" => '<%= @clinic["name"].downcase.gsub(" ", "_") %> <%= "#{@stage}-#{n}" %> <%= "%05.1f" % 3.14159 %>',
    "nil-ivar" => "[<%= @nope %>] <%= @nope.nil? %> <%= (@patient || {})[:name] %>",
    "comment" => "a <%# ignored %>b <%% literal %>\n",
    "assign" => "<% total = 0 -%>\n<% @slots.each do |s| total += s.time.size end -%>\n<%= total %>",
    # programs that read only @ivars of self (their values read before the run, no self set),
    # beside the binding's own locals of the same names and self's remembers?
    "ivars-only" => "<% n = @count + 1 -%><%= n %> <%= @count %> [<%= @nope %>] <%= @stage %> <%= @slots.size %>",
    "ivars-remembers" => "<%= @memory.size %> <%= remembers?('mornings') %> <%= @memory.first.upcase %>",
    "ivar-and-local" => "<%= @count %> <%= n %> <%= @items.inspect %> <%= items.size %>",
  }.freeze

  STAGES = %w[identify book reschedule].freeze

  TEMPLATES.each do |name, src|
    define_method("test_same_as_erb_#{name}") do
      STAGES.each do |stage|
        want, got = Agent.new(stage).both(src)
        assert_equal want, got, "#{name} (stage #{stage})"
      end
    end
  end

  def test_result_with_hash
    src = "<% users.each do |u| -%>\n* <%= u[:name] %> (<%= u[:age] + 1 %>)\n<% end -%>\n<%= title %> <%= shout(title) %>\n"
    h = { users: [{ name: "Ann", age: 30 }, { name: "Bo", age: 4 }], title: "List" }
    assert_equal ERB.new(src, trim_mode: "-").result_with_hash(h), Tpl::ERB.new(src, trim_mode: "-").result_with_hash(h)
  end

  # A respond_to? (or respond_to_missing?) that raises: Ruby's ERB calls o.name without asking it,
  # so the method runs and a missing one is Ruby's NoMethodError (Tpl::ERB raised the respond_to?'s
  # exception, session 27)
  class RaisingRespond
    def respond_to?(*) = raise(ArgumentError, "no respond_to? here")
    def respond_to_missing?(*) = raise(ArgumentError, "no respond_to_missing? here")
    def name = "x"
  end

  def test_respond_to_that_raises_is_not_asked
    o = RaisingRespond.new
    b = binding
    src = "<%= o.name %>|<%= o.zzz rescue 'r' %>"
    assert_equal ERB.new(src).result(b), Tpl::ERB.new(src).result(b)
    e = assert_raises(NoMethodError) { Tpl::ERB.new("<%= o.zzz %>").result(b) }
    assert_match(/undefined method `zzz' for #<TestERB::RaisingRespond/, e.message)
  end

  def test_result_default_toplevel
    src = "<%= shout('top') %>"
    assert_equal ERB.new(src, trim_mode: "-").result, Tpl::ERB.new(src, trim_mode: "-").result
  end

  # trim modes "%", ">", "<>" and their combinations with "-" ("%-", "%>", "%<>"; 1 and 2 are
  # ">" and "<>"), as Ruby's ERB reads them: byte-equal results in the same process (session 22)
  TRIM_SRCS = [
    "% items.each do |i|\n  <%= i %>\n% end\ndone\n",
    "%% literal <%= n %>\n%%%\n% y = n * 2\n<%= y %>\n%# a Ruby comment line\n",
    "<% items.each do |i| %>\n<%= i %>\n<% end %>\ntail %>\nq\n",
    "a <% if true %>\nb\n<% end %> c\n  <%= n %>  \n<%= n %>\r\n<%# c %>\n",
    "<% items.each do |i| -%>\n  <%- if i == 'alpha' -%>\n<%= i -%>\n  <%- end -%>\n<% end -%>\nx -%> y\n",
    "<%% not %%> <%= '%>' %> <%= \"<%%\" %>\n% x = '<%'\n<%= x %>\n",
    "line1\n<%= n\n%>\nline3 <%\n y = 1\n%>\n<%= y %>",
    "% if @count > 2\nbig\n% else\nsmall\n% end",
    "<%=n-%>\n<%=n%>\n<%-n%>\n<% if true %>\r\n<%= local_note %>\r\n<% end %>\r\n",
  ].freeze

  def test_other_trim_modes
    [1, 2, ">", "<>", "%", "%-", "%>", "%<>", "<>%", ">%", "-%"].each do |mode|
      TRIM_SRCS.each do |src|
        want, got = Agent.new("book").both_in(src, mode)
        assert_equal want, got, "trim_mode #{mode.inspect}: #{src.inspect}"
      end
    end
    # one the "-" scan cannot express: refused, naming the mode
    e = assert_raises(ArgumentError) { Tpl::ERB.new("<%<%%>", trim_mode: "%") }
    assert_includes e.message, '"%"'
  end

  # trim_mode nil (ERB.new(src), the default) and 0 scan as "-" but for "<%-" and "-%>": a
  # template with neither renders as ERB renders it, one with either is an ArgumentError. A
  # mode ERB does not know warns as ERB warns and is read as ERB reads it.
  def test_trim_mode_nil_and_invalid
    b = Agent.new("book").instance_eval { items = %w[x y]; [items]; binding }
    ["<% items.each do |i| %>\n  <%= i %>\n<% end %>\n", "a <%# c %> <%% b %%> %> %%>\n<%= items.size %>\n",
     "<%= items.map { |i| \"<%%\#{i}%%>\" }.join %>", "x\r\n<% if true %>\r\ny\r\n<% end %>\r\n"].each do |src|
      [nil, 0].each do |mode|
        assert_equal ERB.new(src, trim_mode: mode).result(b), Tpl::ERB.new(src, trim_mode: mode).result(b), src
      end
      assert_equal ERB.new(src).result(b), Tpl::ERB.new(src).result(b), src
    end
    ["<%- x = 1 %><%= x %>", "a -%> b\n<%= 2 %>\n"].each do |src| # (read by ERB's scanner)
      assert_equal ERB.new(src).result, Tpl::ERB.new(src).result, src
    end
    assert_raises(SyntaxError) { ERB.new("<% x = 1 -%>\n<%= x %>").result }
    assert_raises(SyntaxError) { Tpl::ERB.new("<% x = 1 -%>\n<%= x %>").result }
    src = "<% [1, 2].each do |i| -%>\n<%= i %>\n<% end -%>\n"
    ["abc-def", "--"].each do |mode|
      want, ruby_warn = capture_io { $stdout.print ERB.new(src, trim_mode: mode).result }
      got, tpl_warn = capture_io { $stdout.print Tpl::ERB.new(src, trim_mode: mode).result }
      assert_equal want, got
      assert_equal ruby_warn.sub(/\A.*?warning: /, ""), tpl_warn.sub(/\A.*?warning: /, "")
    end
    _, w = capture_io { Tpl::ERB.new("x", trim_mode: "abc-def") }
    assert_match(/\A#{Regexp.escape(__FILE__)}:#{__LINE__ - 1}: warning: Invalid ERB trim mode: "abc-def"/, w)
  end

  # ERB.new's deprecated positional arguments (safe_level, trim_mode, eoutvar): ERB's warnings,
  # the trim mode read from the third
  def test_deprecated_positional_arguments
    src = "<% 2.times do |i| %>\n<%= i %>\n<% end %>\n"
    [[src, nil], [src, nil, "-"], [src, nil, nil, "_buf"]].each do |args|
      want, ruby_warn = capture_io { $stdout.print ERB.new(*args).result }
      got, tpl_warn = capture_io { $stdout.print Tpl::ERB.new(*args).result }
      assert_equal want, got
      assert_equal ruby_warn.gsub(/^.*?warning: /, ""), tpl_warn.gsub(/^.*?warning: /, "")
      assert_match(/\A#{Regexp.escape(__FILE__)}:#{__LINE__ - 3}: warning: Passing safe_level/, tpl_warn)
    end
  end

  # A render error is Ruby's own class, as ERB raises it (e.class is ::NameError, ...), and is
  # still rescued as the tpl class it was, with tpl's fields; lineno= moves its line.
  def test_render_errors_are_rubys_classes
    b = Agent.new("book").instance_eval { items = [1]; [items]; binding }
    { "<%= nobody %>" => ::NameError, "<%= items.nope %>" => ::NoMethodError, "<%= 1 / 0 %>" => ::ZeroDivisionError,
      "<%= {}.fetch(:k) %>" => ::KeyError, "<%= items.fetch(9) %>" => ::IndexError, "<% raise 'boom' %>" => ::RuntimeError,
      "<%= Integer('x') %>" => ::ArgumentError, "<%= 1 + nil %>" => ::TypeError,
      "<% s = 'a'.freeze; s << 'b' %>" => ::FrozenError }.each do |src, cls|
      ruby = assert_raises(Exception) { ERB.new(src, trim_mode: "-").result(b) }
      assert_equal cls, ruby.class, "stdlib: #{src}"
      e = assert_raises(Exception) { Tpl::ERB.new(src, trim_mode: "-").result(b) }
      assert_equal cls, e.class, src
      assert_kind_of Tpl::ERB::Error, e
      assert_equal 1, e.line
      assert_kind_of Tpl::Error, e.tpl_error
      assert_raises(e.tpl_error.class) { Tpl::ERB.new(src, trim_mode: "-").result(b) }
      assert_raises(Tpl::Error) { Tpl::ERB.new(src, trim_mode: "-").result_with_hash(items: [1]) }
    end
    erb = Tpl::ERB.new("a\n<%= nobody %>", trim_mode: "-")
    erb.lineno = 100
    e = assert_raises(::NameError) { erb.result_with_hash({}) }
    assert_equal 102, e.line
    assert_match(/\A\(erb\):102:5: error: undefined local variable/, e.message)
    erb.location = ["v.erb", 10]
    e = assert_raises(::NameError) { erb.result_with_hash({}) }
    assert_equal ["v.erb", 12], [e.file, e.line]
    erb.filename = "w.erb"
    assert_match(/\Aw\.erb:12:5: /, assert_raises(::NameError) { erb.result_with_hash({}) }.message)
  end

  # a template that does not parse is Ruby's ::SyntaxError (from new; ERB's from result), a
  # construct outside tpl's subset too; still rescued as Tpl::SyntaxError, with its location
  def test_compile_error_is_rubys_syntax_error
    ["<% if x %>", "a\n<%= [1, 2 %>", "<%= @@count %>"].each do |src|
      ruby = assert_raises(ScriptError) { ERB.new(src, trim_mode: "-").result_with_hash(x: 1) } unless src.include?("@@")
      e = assert_raises(ScriptError) { Tpl::ERB.new(src, trim_mode: "-", filename: "v.erb") }
      assert_equal ruby.class, e.class, src if ruby
      assert_equal ::SyntaxError, e.class, src
      assert_kind_of Tpl::ERB::Error, e
      assert_equal "v.erb", e.file
      assert_raises(Tpl::SyntaxError) { Tpl::ERB.new(src, trim_mode: "-") }
    end
  end

  # result_with_hash's keys are local variable names, as Binding#local_variable_set takes them
  # A Ruby Rational in the state is tpl's Rational (arithmetic, printing, ==, Hash keys as Ruby), and one
  # the template makes reaches a Ruby method as a Rational (session 29)
  def test_rational_both_ways
    h = { r: Rational(1, 3), big: Rational(10**30 + 1, 7), list: [Rational(1, 2), 1] }
    src = "<%= r %> <%= (r + 1).inspect %> <%= r * 3 == 1 %> <%= big.denominator %> <%= list.sum %> <%= list.inspect %> " \
          "<%= r.class %> <%= [r, 0.25].max %> <%= took(r / 2) %> <%= took(2 ** -3) %>"
    helper = Module.new { def took(x) = "#{x.class}:#{x.inspect}" }
    o = Object.new.extend(helper)
    b = o.instance_eval { binding }
    h.each { |k, v| b.local_variable_set(k, v) }
    assert_equal "1/3 (4/3) true 7 3/2 [(1/2), 1] Rational 1/3 Rational:(1/6) Rational:(1/8)", ERB.new(src).result(b)
    assert_equal ERB.new(src).result(b), Tpl::ERB.new(src).result(b)
  end

  def test_math_of_host_numeric
    # Ruby's Math converts a Numeric like BigDecimal; tpl refuses it (never a TypeError a rescue takes)
    require "bigdecimal"
    src = "<%= (Math.sqrt(d) rescue 'R') %> <%= Math.sqrt(r) %>"
    assert_equal "1.4142135623730951 1.5", ERB.new(src).result_with_hash(d: BigDecimal("2"), r: Rational(9, 4))
    e = assert_raises(Tpl::Error) { Tpl::ERB.new(src).result_with_hash(d: BigDecimal("2"), r: Rational(9, 4)) }
    assert_match(/a Math function of a host object/, e.message)
  end

  def test_result_with_hash_keys
    # (Symbols spelled as locals are taken without asking Ruby: tpl_ext.c erb_key_i; the others asked)
    [{ 1 => "1" }, { "a b" => 1 }, { :@x => 1 }, { nil => 1 }, { :a? => 1 }, { A: 1 }, { "a!": 1 }, { "": 1 }].each do |h|
      ruby = assert_raises(StandardError) { ERB.new("<%= 1 %>").result_with_hash(h) }
      e = assert_raises(StandardError) { Tpl::ERB.new("<%= 1 %>").result_with_hash(h) }
      assert_equal [ruby.class, ruby.message.lines.first], [e.class, e.message.lines.first], h.inspect
    end
    assert_equal "1 2", Tpl::ERB.new("<%= a %> <%= b %>").result_with_hash(:a => 1, "b" => 2)
    h = { if: 1, _x: 2, aB9: 3, "é": 4, x: 5 }
    assert_equal ERB.new("<%= x %>").result_with_hash(h), Tpl::ERB.new("<%= x %>").result_with_hash(h)
  end

  class Base; end

  # def_method, def_module, def_class and ERB::DefMethod: methods that render with their
  # arguments as locals and their receiver as self, as ERB's do
  def test_def_method_module_class
    src = "<%= greet(name) %> <%= n * 2 %> <%= @stage %>"
    [ERB, Tpl::ERB].map do |e|
      erb = e.new(src, trim_mode: "-")
      k = Class.new(Agent)
      erb.def_method(k, "view(name, n = 1)")
      mod = erb.def_module("show(name, n)")
      cls = erb.def_class(Base, "render(name, n: 3)")
      assert_equal Base, cls.superclass
      assert_raises(::ArgumentError) { k.new("x").view }
      m = Class.new(Agent) { include mod }
      dm = Class.new(Agent) { extend e::DefMethod; def_erb_method("page(name)", e.new("[<%= name %>|<%= @count %>]")) }
      [k.new("book").view("Ann"), k.new("book").view("Bo", 5), m.new("ask").show("Cy", 2), dm.new("x").page("Di"),
       (cls.new.render("Ed") rescue $!.class)]
    end.then { |want, got| assert_equal want, got }
  end

  def test_util
    strs = [" !\"\#$%&'()*+,-./0123456789:;<=>?@AZ[\\]^_`az{|}~", "", "<\<", "café ☃", nil, 123, :sym]
    strs.each do |s|
      %i[html_escape h url_encode u].each { |m| assert_equal ERB::Util.public_send(m, s), Tpl::ERB::Util.public_send(m, s) }
    end
    euc = "\xA5\xB5\xA5\xF3".dup.force_encoding("EUC-JP")
    assert_equal ERB::Util.url_encode(euc), Tpl::ERB::Util.url_encode(euc)
    o = Class.new { include Tpl::ERB::Util; def go = [h("<a>"), u("a b")] }.new
    assert_equal ["&lt;a&gt;", "a%20b"], o.go
  end

  # The template's encoding, as ERB gives it (a magic comment's, else the String's): a result in
  # it when ASCII-only; what tpl cannot render as ERB does is an ArgumentError, never other text
  def test_encodings
    ascii = "hi <%= x %>".encode("US-ASCII")
    [["ok"], ["caf\u00e9"]].each do |(x)|
      want = ERB.new(ascii).result_with_hash(x: x)
      got = Tpl::ERB.new(ascii).result_with_hash(x: x)
      assert_equal [want, want.encoding], [got, got.encoding]
    end
    assert_equal Encoding::US_ASCII, Tpl::ERB.new(ascii).encoding
    assert_equal ERB.new("x").encoding, Tpl::ERB.new("x").encoding
    magic = "<%# -*- coding: EUC-JP -*- %>abc"
    assert_equal [ERB.new(magic).result, ERB.new(magic).result.encoding], [Tpl::ERB.new(magic).result, Tpl::ERB.new(magic).result.encoding]
    # (__ENCODING__ is: test_encoding_keyword_same_as_erb)
    ["<%= ''.encoding %>".encode("EUC-JP"), "caf\u00e9 <%= 'x'.force_encoding('UTF-8') %>".encode("ISO-8859-1"),
     "<%# coding: EUC-JP %><%= ''.encode('UTF-8').size %>"].each do |src|
      refute_equal "UTF-8", ERB.new(src).result rescue nil
      assert_raises(ArgumentError) { Tpl::ERB.new(src) }
    end
    e = assert_raises(ArgumentError) { Tpl::ERB.new("x".dup.force_encoding("ISO-2022-JP")) }
    assert_equal "ISO-2022-JP is not ASCII compatible", e.message
  end

  # ERB's result or exception for src rendered with x, as [text, encoding] or [class, message]
  def erb_outcome(k, src, x, mode = nil)
    got = k.new(src, trim_mode: mode).result_with_hash(x: x)
    [got, got.encoding]
  rescue EncodingError => e
    [e.class, e.message]
  end

  # Templates in other encodings than UTF-8 with non-ASCII text (ISO-8859-1, Windows-1252,
  # ASCII-8BIT, EUC-JP, Shift_JIS; a magic comment's), compared with ERB in the same process:
  # the result in the template's encoding, or in a value's when ERB's buffer takes it (ASCII so
  # far), Encoding::CompatibilityError with Ruby's message where String#<< raises it
  def test_non_utf8_templates_same_as_erb
    srcs = ["caf\u00e9 <%= x %>".encode("ISO-8859-1"), "<%= x %> caf\u00e9".encode("ISO-8859-1"),
            "\u20ac <%= x %>!".encode("Windows-1252"), "\xff <%= x %> \xfe".b, "<%= x %>\n\xe9".b,
            "<% if x == 'no' %>\u00e9<% end %>ok <%= x %>".encode("ISO-8859-1"),
            "<%= '\u00e9t\u00e9' %> <%= x %> <%= x.to_s.size %>".encode("ISO-8859-1"),
            "\u3042\u8868 <%= x %>".encode("EUC-JP"), "\u8868\u80fd <%= x %> \u8868".encode("Shift_JIS"),
            "<%#coding:ISO-8859-1%>caf\xE9 <%= x %>".b, "plain <%= x %>".encode("ISO-8859-1")]
    values = ["plain", "Jos\u00e9", "Jos\u00e9".encode("ISO-8859-1"), "\u00e9".b, 42, nil, :sym, "\u20ac".encode("Windows-1252"),
              "\u3042".encode("EUC-JP"), "\u{FFF00}\u{F4001}\u{F0141}\u{F0041}"] # (the last: private-use characters no tag can be)
    outcomes = Hash.new(0)
    srcs.each do |src|
      values.each do |x|
        want = erb_outcome(ERB, src, x)
        got = erb_outcome(Tpl::ERB, src, x)
        assert_equal want, got, "#{x.inspect} in #{src.inspect}"
        outcomes[want[0].is_a?(Class) ? want[0] : want[1]] += 1
      end
    end
    # each kind of outcome is there: results in the template's and in a value's encoding, errors
    assert_operator outcomes.size, :>=, 5, outcomes.inspect
    assert_operator outcomes[Encoding::CompatibilityError], :>, 0
    # other trim modes (ERB's scanner) and a binding's @ivars, the same way
    src = "%# note\ncaf\u00e9 <%= x %>\n".encode("ISO-8859-1")
    values.each { |x| assert_equal erb_outcome(ERB, src, x, "%"), erb_outcome(Tpl::ERB, src, x, "%"), x.inspect }
    src = "\u00e9 <%= @v %> <%= @v.to_s.bytesize %>".encode("ISO-8859-1")
    values.each do |v|
      want, got = [ERB, Tpl::ERB].map do |k|
        r = k.new(src).result(EncView.new(v).bind)
        [r, r.encoding]
      rescue EncodingError => e
        [e.class, e.message]
      end
      assert_equal want, got, v.inspect
    end
  end

  # Values in other encodings than UTF-8, compared with ERB in the same process: ERB appends
  # their bytes as they are (a result in their encoding, or Encoding::CompatibilityError when
  # the rest is not ASCII); Tpl::ERB gives ERB's result or raises an EncodingError saying why —
  # never other bytes, never invalid UTF-8
  class EncView
    def initialize(v) = @v = v
    def bind = binding
  end

  def test_non_utf8_values_same_as_erb_or_refused
    latin = "caf\xE9".dup.force_encoding("ISO-8859-1")
    values = [latin, "\x80 euro".dup.force_encoding("Windows-1252"), "ab\xff".b, "caf\u00e9".b, "ab\xff".dup,
              "plain".encode("ISO-8859-1"), "plain".b, "caf\u00e9".encode("UTF-16LE"), :"caf\u00e9", "caf\u00e9"]
    srcs = ["a <%= @v %>", "\u00e9 <%= @v %>", "<%= @v.to_s.bytesize %>", "<%= [@v].size %>", "<%= { @v => 1 }.size %>",
            "<%= @v %> \u00e9", "<%= @v %><%= @v %>", "<%= @v.upcase %> <%= @v.size %>", "<%= @v.to_s == 'caf\u00e9' %>",
            "<%= { @v => 1 }.keys.first %>", "<%= [@v, @v].join(', ') %>"]
    refused = 0
    values.each do |v|
      srcs.each do |src|
        want = begin
          ERB.new(src).result(EncView.new(v).bind)
        rescue EncodingError, ArgumentError => e # (ArgumentError: upcase of invalid UTF-8)
          e
        end
        got = begin
          Tpl::ERB.new(src).result(EncView.new(v).bind)
        rescue EncodingError, ArgumentError => e # (ArgumentError: Ruby's upcase, of a String kept as Ruby's)
          # (a String in UTF-16 printed: Ruby's error, whose names' order is the buffer's, or,
          # printed first, ERB's result is in UTF-16 where tpl's would be UTF-8: refused)
          if e.message.match?(/Tpl::ERB: String in \S+ with non-ASCII|not valid UTF-8/) ||
             (!v.encoding.ascii_compatible? && e.is_a?(Encoding::CompatibilityError) &&
              e.message.start_with?("incompatible character encodings: UTF-8 and UTF-16LE"))
            refused += 1
            next
          end
          e
        end
        if want.is_a?(Exception)
          assert_equal [want.class, want.message], [got.class, got.message.sub(/ \(tpl: raised while rendering.*\z/m, "")],
                       "#{v.inspect} in #{src.inspect}"
          next
        end
        assert got.valid_encoding?, "#{v.inspect} in #{src.inspect}"
        refute_kind_of Exception, got, "#{v.inspect} in #{src.inspect}: Tpl::ERB raised, ERB gave #{want.inspect}"
        assert_equal [want, want.encoding], [got, got.encoding], "#{v.inspect} in #{src.inspect}"
      end
    end
    assert_operator refused, :>, 0
    # a Hash for the locals, and a Hash key, the same way
    ["<%= v %>", "\u00e9<%= v %>", "<%= h.keys.first %>", "\u00e9<%= h.keys.first %>"].each do |src|
      want, got = [ERB, Tpl::ERB].map do |k|
        k.new(src).result_with_hash(v: latin, h: { latin => 1 }).then { [_1, _1.encoding] }
      rescue EncodingError => e
        [e.class, e.message]
      end
      assert_equal want, got, src
    end
    # Tpl::Template converts them (its documented conversion)
    assert_equal "café", Tpl::Template.new("<%= v %>", syntax: :erb).render(v: latin)
  end

  # Operators and String methods on values in other encodings (ISO-8859-1, Windows-1252,
  # ASCII-8BIT, Shift_JIS), in a UTF-8 and an ISO-8859-1 template, compared with ERB in the same
  # process: the value stays a Ruby String, so they are Ruby's own (`"x" + v` too: String#+);
  # a literal passed to its methods is in the template's encoding, as in ERB
  class EncPair
    def initialize(v, w) = (@v, @w = v, w)
    def bind = binding
  end

  def erb_pair_outcome(k, src, v, w)
    got = k.new(src).result(EncPair.new(v, w).bind)
    [got, got.encoding]
  rescue StandardError => e
    [e.class, e.message.sub(/ \(tpl: raised while rendering.*\z/m, "")]
  end

  def test_non_utf8_string_operators_same_as_erb
    vals = ["caf\u00e9".encode("ISO-8859-1"), "\u20ac 5".encode("Windows-1252"), "ab\xff\xfe".b, "\u8868\u80fd".encode("Shift_JIS")]
    ops = ['<%= @v + "!" %>', '<%= "x: " + @v %>', "<%= @v * 2 %>", "<%= @v == @w %>", "<%= @v == @v.dup %>",
           '<%= @v == "caf\u00e9" %> <%= "plain" == @v %> <%= 1 == @v %>', "<%= @v != @w %>", "<%= @v <=> @w %>",
           "<%= @v < @w %>", "<%= @v >= @v %>", "<%= @v.length %> <%= @v.size %> <%= @v.bytesize %>", "<%= @v.upcase %>",
           "<%= @v[0] %>|<%= @v[1, 2] %>|<%= @v[-1] %>", '<%= @v.include?("a") %> <%= @v.include?(@v[-1]) %>',
           '<%= "<#{@v}>" %>', "<%= @v.encoding %>", '<%= @v.dup.force_encoding("UTF-8").valid_encoding? %>',
           '<%= @v.encode("UTF-8") %>', "<%= @v.valid_encoding? %>", "<%= (@v + @v).bytesize %> <%= (@v * 3).length %>",
           '<%= [@v + "!", @v].join("/") %>', '<%= "\u00e9" + @v %>', '<%= @v.include?("\u00e9") %>']
    latin = ['\u00e9 <%= @v + "!" %>', '<%= "\u00e9: " + @v %>', '<%= @v.include?("\u00e9") %> <%= @v.index("\u00e9") %>',
             "\u00e9 <%= @v * 2 %> <%= @v == @w %> <%= @v.length %> <%= @v.upcase %>", '<%= @v == "caf\u00e9" %>',
             "<%= __ENCODING__ %> \u00e9"].map { _1.encode("ISO-8859-1") }
    kinds = Hash.new(0)
    vals.each_with_index do |v, i|
      [v + "z", vals[(i + 1) % vals.size]].each do |w|
        (ops + latin).each do |src|
          want = erb_pair_outcome(ERB, src, v, w)
          assert_equal want, erb_pair_outcome(Tpl::ERB, src, v, w), "#{v.inspect}, #{w.inspect} in #{src.inspect}"
          kinds[want[0].is_a?(Class) ? want[0] : want[1]] += 1
        end
      end
    end
    # results in each value's encoding, in UTF-8 and the template's, and Ruby's errors
    assert_operator kinds.size, :>=, 6, kinds.inspect
    assert_operator kinds[Encoding::CompatibilityError], :>, 0, kinds.inspect
  end

  # __ENCODING__ in a template in another encoding (a magic comment's, or ERB.new of a String in
  # it): the encoding ERB's prints, in a result in that encoding
  def test_encoding_keyword_same_as_erb
    ["<%= __ENCODING__ %>".encode("US-ASCII"), "<%#coding:EUC-JP%><%= __ENCODING__ %>",
     "<%# -*- coding: Shift_JIS -*- %><%= __ENCODING__ %> <%= '__ENCODING__' %>",
     "caf\u00e9 <%= __ENCODING__ %> <%= __ENCODING__.to_s.size %>".encode("ISO-8859-1"),
     "<%= x = __ENCODING__ # __ENCODING__\n x %>".encode("Windows-1252"), "<%= __ENCODING__ %>".b].each do |src|
      want, got = [ERB, Tpl::ERB].map { |k| k.new(src).result.then { [_1, _1.encoding] } }
      assert_equal want, got, src.inspect
    end
  end

  # #filename= and #lineno= locate a render error as ERB's: its template frame in the backtrace
  # ("FILE:LINE:in `METHOD'", compared with ERB's in the same process), innermost for the
  # template's own error, under the frames of a method it called that raised
  class Raiser
    def boom = raise(ArgumentError, "bad")
    def bind = binding
  end

  def test_filename_lineno_in_backtrace_as_erb
    frame = ->(ex) { ex.backtrace.select { |l| l.start_with?("v.erb:") }.last } # (ERB's has Integer#/ at the same line too)
    [["a\n<%= nope %>", NameError, 0], ["a\n\n<%= 1 / 0 %>", ZeroDivisionError, 0], ["x\n<%= boom %>", ArgumentError, 1]].each do |src, cls, depth|
      got = [ERB, Tpl::ERB].map do |k|
        e = k.new(src)
        e.filename = "v.erb"
        e.lineno = 5
        ex = assert_raises(cls) { e.result(Raiser.new.bind) }
        [frame.call(ex), ex.backtrace.index(frame.call(ex))]
      end
      assert_equal got[0][0], got[1][0], src
      assert_equal depth, got[1][1], src
    end
    e = Tpl::ERB.new("x\n<%= boom %>")
    e.lineno = 5
    assert_match(/raised while rendering \(erb\), line 7, column 5\)\z/, assert_raises(ArgumentError) { e.result(Raiser.new.bind) }.message)
    want = assert_raises(ZeroDivisionError) { ERB.new("<%= 1/0 %>").result_with_hash(a: 1) }.backtrace.grep(/\A\(erb\)/).last
    assert_equal want, assert_raises(ZeroDivisionError) { Tpl::ERB.new("<%= 1/0 %>").result_with_hash(a: 1) }.backtrace.first
    bo = BasicObject.new.instance_eval { ::Kernel.binding } # (no Kernel#__method__ in it: the error is still the template's)
    assert_raises(ZeroDivisionError) { Tpl::ERB.new("<%= 1/0 %>").result(bo) }
  end

  # an ivars-only program reads self's @ivars in one walk when self has few (rb_ivar_foreach),
  # by name when it has many: set, set to nil, unset, and a Class as self, the same as ERB
  def test_ivars_walked_or_looked_up_same_as_erb
    src = "<%= @a %>|<%= @n.inspect %>|<%= @unset.inspect %>|<%= @b.to_s * 2 %>"
    few = Object.new.tap { |o| o.instance_variable_set(:@a, "A"); o.instance_variable_set(:@n, nil); o.instance_variable_set(:@b, 1) }
    many = Object.new.tap { |o| 40.times { |i| o.instance_variable_set(:"@x#{i}", i) }; o.instance_variable_set(:@a, "A2") }
    klass = Class.new.tap { |k| k.instance_variable_set(:@a, "K") }
    t = Tpl::ERB.new(src)
    [few, many, klass, Object.new].each do |o|
      b = o.instance_eval { binding }
      2.times { assert_equal ERB.new(src).result(b), t.result(b) }
    end
  end

  # ERB's output buffer (eoutvar: "_erbout" or the name given) as a variable in the template's
  # code: a NotImplementedError naming it when the template is made (ERB renders it); in text or
  # a comment tag it is only text
  def test_eoutvar_in_code_not_implemented
    [["a<% _erbout << 'x' %>b", {}], ["a<%= _erbout.size %>", {}], ["a<% @out << 'x' %>b", { eoutvar: "@out" }],
     ["a<% buf << 'x' %>b", { eoutvar: "buf" }]].each do |src, kw|
      assert_equal "axb", ERB.new(src, **kw).result(binding).sub("a1", "axb") # ERB renders it
      e = assert_raises(NotImplementedError) { Tpl::ERB.new(src, **kw) }
      assert_includes e.message, kw[:eoutvar] || "_erbout"
    end
    ["_erbout <%= 1 %>", "<%# _erbout %>x", "<%= my_erbout2 %>", "<%= @_erbout %>"].each do |src|
      o = Object.new
      def o.my_erbout2 = 2
      b = o.instance_eval { binding }
      assert_equal ERB.new(src).result(b), Tpl::ERB.new(src).result(b), src
    end
    assert_equal "x", Tpl::ERB.new("<%= buf %>", eoutvar: "_out").result_with_hash(buf: "x")
  end

  # what Tpl::ERB does not provide is a NotImplementedError naming it; an ERB allocated and not
  # initialized is ERB's ArgumentError; neither marshals
  def test_not_provided
    assert_raises(NotImplementedError) { Tpl::ERB.new("x").src }
    sub = Class.new(Tpl::ERB) { def make_compiler(mode) = mode }
    assert_match(/make_compiler/, assert_raises(NotImplementedError) { sub.new("x") }.message)
    assert_equal "ok", Class.new(Tpl::ERB).new("ok").result
    [ERB, Tpl::ERB].each do |e|
      assert_raises(::TypeError) { Marshal.dump(e.new("x")) }
      assert_equal "not initialized", assert_raises(::ArgumentError) { e.allocate.result }.message
    end
  end

  # ERB.new of what is not a String names its class (the message said NilClass for any); the
  # version is the erb whose API Tpl::ERB has (code picking ERB.new's form by it)
  def test_new_argument_and_version
    [[42, "Integer"], [nil, "NilClass"], [:abc, "Symbol"], [Object.new, "Object"]].each do |(src, cls)|
      e = assert_raises(::TypeError) { Tpl::ERB.new(src) }
      assert_equal "no implicit conversion of #{cls} into String", e.message
    end
    assert_equal "2.2.3", Tpl::ERB.version
    assert_equal ERB.version, Tpl::ERB.version if ERB.version == "2.2.3"
  end

  def test_unknown_name_is_name_error_with_location
    e = assert_raises(Tpl::NameError) { Tpl::ERB.new("ok\n<%= nobody %>", trim_mode: "-").result_with_hash({}) }
    assert_equal 2, e.line
    assert_equal 5, e.column
    assert_match(/undefined local variable or method `nobody'/, e.message)
  end

  class Named
    def initialize = @a = "x" * 10
    def bind = binding
  end

  class Custom
    def inspect = "custom"
    def bind = binding
  end

  Pt = Struct.new(:a) do
    def bind = binding
  end

  # NameError/NoMethodError worded as Ruby 3.1's (compared with ERB in the same process): the
  # binding's receiver as Ruby names it (#<Named:0x... @a="...">, #<struct ...>, custom:Custom,
  # main:Object, 5:Integer), nil:NilClass, "abc":String...; the error's name, and its receiver for self
  def test_name_errors_worded_as_ruby
    bindings = [Named.new.bind, Custom.new.bind, Pt.new(1).bind, TOPLEVEL_BINDING, 5.instance_eval { binding }, nil.instance_eval { binding }]
    srcs = ["<%= nope %>", "a\n<%= nope(1) %>", "<%= nil.foo %>", "<%= 'abc'.foo %>", "<%= [1].foo %>", "<%= @a.foo %>"]
    bindings.each do |b|
      srcs.each do |src|
        ruby = assert_raises(::NameError) { ERB.new(src).result(b) }
        e = assert_raises(::NameError) { Tpl::ERB.new(src).result(b) }
        where = "#{src.inspect} in #{b.receiver.inspect}"
        assert_equal ruby.class, e.class, where
        assert_equal ruby.name, e.name, where
        # Ruby's message (did_you_mean's lines aside) within tpl's located one
        assert_includes e.message, "#{ruby.message.lines.first.chomp} (#{ruby.class})", where
        assert_same ruby.receiver, e.receiver, where if e.message.include?("undefined local variable")
      end
    end
    # did_you_mean's suggestions for self's names, as Ruby's (name and receiver set)
    ["<%= bnd %>", "<%= bnd(1) %>"].each do |src|
      ruby = assert_raises(::NameError) { ERB.new(src).result(Named.new.bind) }
      e = assert_raises(::NameError) { Tpl::ERB.new(src).result(Named.new.bind) }
      refute_empty ruby.message.lines.drop(1), src
      assert_equal ruby.message.lines.drop(1), e.message.lines.drop_while { !_1.start_with?("Did you mean?") }, src
    end
  end

  def test_unknown_method_error
    e = assert_raises(Tpl::Error) { Tpl::ERB.new("<%= nothing_here(1) %>", trim_mode: "-").result_with_hash({}) }
    assert_match(/undefined method `nothing_here'/, e.message)
    assert_equal 1, e.line
  end

  def test_syntax_error_class
    e = assert_raises(Tpl::SyntaxError) { Tpl::ERB.new("<% if x %>", trim_mode: "-", filename: "v.erb") }
    assert_equal "v.erb", e.file
  end

  def test_method_exception_reraised
    o = Class.new do
      def fail_now = raise(IOError, "disk gone")
      def go = Tpl::ERB.new("a\n<%= fail_now %>", trim_mode: "-", filename: "x.erb").result(binding)
    end.new
    e = assert_raises(IOError) { o.go }
    assert_match(/disk gone \(tpl: raised while rendering x\.erb, line 2, column 5\)/, e.message)
  end

  # Scalar @ivars (read without rb_protect) and the others, each type as stdlib ERB prints it;
  # an unset @ivar is nil; an ASCII String in another encoding is converted; the value is read once
  # per render (changing it between renders is seen).
  class Scalars
    def initialize
      @s = "caf\u00e9"
      @a = "plain"
      @bin = "bytes".b
      @latin = "ete".dup.force_encoding("ISO-8859-1") # ASCII: the same bytes in UTF-8 (non-ASCII: test_non_utf8_values)
      @i = 42
      @big = 2**70
      @f = 2.5
      @t = true
      @no = false
      @nil = nil
      @sym = :sym
      @list = [1, "two", nil]
      @h = { "k" => "v" }
    end

    attr_writer :i, :s

    def bind = binding
  end

  def test_scalar_ivars_same_as_erb
    src = "<%= @s %>|<%= @a %>|<%= @bin %>|<%= @latin %>|<%= @latin.encode('UTF-8') %>|<%= @i + 1 %>|<%= @big %>|<%= @f * 2 %>|" \
          "<%= @t %>|<%= @no %>|<%= @nil.inspect %>|<%= @unset.inspect %>|<%= @sym %>|<%= @list.inspect %>|" \
          "<%= @h['k'] %>|<%= @i %><%= @s.upcase %>|<%= @no ? 1 : 2 %>|<%= @nil.nil? %>|<%= @unset.nil? %>"
    o = Scalars.new
    t = Tpl::ERB.new(src, trim_mode: "-")
    3.times do |n|
      o.i = n
      o.s = "s#{n}\u00e9"
      assert_equal ERB.new(src, trim_mode: "-").result(o.bind), t.result(o.bind)
    end
  end

  # a program that reads only @ivars converts them before the run like a Hash's values (short
  # Strings borrowed): under GC.stress with compaction, a String from another encoding and a
  # Bignum allocate while they are converted, so the state is made again, copying them
  class IvarView
    def initialize
      @a = +"ab"
      @b = "cafe".dup.force_encoding("ISO-8859-1") # (converted: allocates)
      @l = [+"p", +"q", +"r"]
      @n = 2**70
    end

    def bind = binding
  end

  # defined?(@x) reads @x: a program that reads no @ivar otherwise still sees self's (nil for an unset one)
  def test_defined_ivar_same_as_erb
    src = "<%= defined?(@s).inspect %>|<%= defined?(@unset).inspect %>|<%= defined?(@nil).inspect %>"
    o = Scalars.new
    assert_equal ERB.new(src, trim_mode: "-").result(o.bind), Tpl::ERB.new(src, trim_mode: "-").result(o.bind)
    assert_equal '"instance-variable"|nil|"instance-variable"', Tpl::ERB.new(src, trim_mode: "-").result(o.bind)
  end

  def test_ivars_only_gc_during_conversion
    src = "<%= @a %>|<%= @b.encode('UTF-8') %>|<%= @l.join(',') %>|<%= @n %>|<%= @unset.inspect %>"
    b = IvarView.new.bind
    want = ERB.new(src, trim_mode: "-").result(b)
    t = Tpl::ERB.new(src, trim_mode: "-")
    under_gc_stress(3) { t.result(b) }.each_with_index { |got, i| assert_equal want, got, "round #{i}" }
    assert_equal want, t.result(b)
  end

  # what keeps the self object although the program reads @ivars: a bare name (a local of the
  # binding, or self's method) or `call` (a local may be named so, as Ruby resolves it); and
  # with a Hash for the locals, an @ivar is still self's, whatever the Hash holds under its name
  class CallView
    def initialize
      @a = "A"
      @stage = "st"
    end

    def remembers?(x) = x == "y"

    def bind
      call = { channel: "sms" }
      n = 1
      [call, n]
      binding
    end
  end

  def test_ivars_beside_locals_call_and_functions
    o = CallView.new
    b = o.bind
    ["<%= call[:channel] %> <%= @a %>", "<%= @a %> <%= @stage %>", "<%= remembers?('y') %> <%= @a %>",
     "<%= n %> <%= @a %>", "<%= format('%s-%s', @a, @stage) %>"].each do |src|
      assert_equal ERB.new(src, trim_mode: "-").result(b), Tpl::ERB.new(src, trim_mode: "-").result(b), src
    end
    t = Tpl::Template.new("<%= @stage %>|<%= format('%s', @a) %>", syntax: :erb)
    assert_equal "st|A", t.render_with_self({ stage: "hash", a: "ha" }, o)
    assert_equal "hash|ha", t.render({ stage: "hash", a: "ha" })
  end

  # remembers("...")'s argument is a fresh, unfrozen String each call, as the literal in ERB's
  # code: a method that keeps or changes it sees what ERB's sees (tpl_ext.c remembers_arg keeps
  # a frozen copy per phrase and passes a dup of it)
  class KeepingView
    attr_reader :seen

    def initialize = @seen = []

    def remembers(x)
      @seen << x
      x << "!"
      x.frozen?
    end

    def bind = binding
  end

  def test_remembers_argument_is_fresh_and_mutable
    src = "<%= remembers('usual doctor') %> <%= remembers('usual doctor') %> <%= remembers('a' * 70) %>"
    [ERB, Tpl::ERB].map do |k|
      v = KeepingView.new
      e = k.new(src, trim_mode: "-")
      out = 2.times.map { e.result(v.bind) }
      [out, v.seen, v.seen.map(&:object_id).uniq.size, v.seen.map(&:encoding).uniq]
    end.then do |erb, tpl|
      assert_equal erb[0..1], tpl[0..1]
      assert_equal 6, tpl[2]
      assert_equal [Encoding::UTF_8], tpl[3]
    end
  end

  # A remembers method on self (Ruby code during the render) that replaces, shrinks and frees
  # self's @ivar Strings, then compacts the heap: the render reads them after it as Ruby's ERB
  # does (live: read again after Ruby code ran; session 31 read them once, before the run),
  # short and long, alone and in an Array of Hashes, render after render, byte-equal to ERB
  class MutatingView
    def initialize
      @s = "s" * 100
      @e = "e"
      @list = [{ "a" => "x" * 200, "b" => "y" }, { "a" => "z" }]
      @big = 2000.times.map { |i| "#{i}" + "b" * 200 } # past the copies' 256 KiB: copied as before
    end

    def remembers(_w)
      @s.replace("S" * 5000)
      @e << "E"
      @list.each { |h| h.each_value { |v| v.replace("Q" * 3000) } }
      @big.each { |v| v.replace("") }
      @list << { "a" => "new" }
      GC.start
      GC.compact if GC.respond_to?(:compact)
      true
    end

    def bind = binding
  end

  def test_state_strings_copied_when_ruby_code_runs
    src = "<%= remembers('x') %>|<%= @s %>|<%= @e %>|<% @list.each do |h| %><%= h[\"a\"] %>,<%= h[\"b\"] %>;<% end %>" \
          "<%= @big.map(&:size).sum %><%= @big.last %>"
    e = Tpl::ERB.new(src, trim_mode: "-")
    3.times do
      want = ERB.new(src, trim_mode: "-").result(MutatingView.new.bind)
      assert want.start_with?("true|#{"S" * 5000}|eE|"), "Ruby's ERB reads the changed @ivars"
      assert_equal want, e.result(MutatingView.new.bind)
    end
  end

  def test_threads
    src = TEMPLATES["each"] + TEMPLATES["methods"]
    want = Agent.new("book").both(src).first
    threads = 6.times.map { Thread.new { 300.times.all? { Agent.new("book").both(src).last == want } } }
    threads.each { |t| assert t.value }
  end

  def rss_kb = File.read("/proc/self/status")[/VmRSS:\s+(\d+)/, 1].to_i

  def test_no_leak_100k_renders
    src = TEMPLATES["each"] + TEMPLATES["ivars"] + TEMPLATES["methods"]
    agent = Agent.new("book")
    tpl = Tpl::ERB.new(src, trim_mode: "-")
    b = agent.instance_eval { items = %w[a b]; n = 2; binding }
    20_000.times { tpl.result(b) }
    GC.start
    before = rss_kb
    objs = GC.stat(:heap_live_slots)
    100_000.times { tpl.result(b) }
    GC.start
    grew = rss_kb - before
    assert grew < 8_000, "RSS grew #{grew} kB over 100,000 renders"
    assert GC.stat(:heap_live_slots) < objs * 1.2 + 10_000, "live objects #{objs} -> #{GC.stat(:heap_live_slots)}"
  end
end

# Which of self's methods answers remembers (remembers? if self.respond_to?(:remembers?, true), else
# remembers, else none: the facts) is asked on every render (tpl_ext.c self_responds, method-cache
# lookups where respond_to? and respond_to_missing? are Kernel's): a method defined, made private,
# undefined or removed after the first render, on the class, a module included or prepended later or
# the object's singleton class, and respond_to? / respond_to_missing? redefined, each answered as
# Ruby's respond_to? answers at that render.
class TestRemembersSelfLater < Minitest::Test
  def fresh_class = Class.new { def bind = binding }

  # remembers? answers "x" only, remembers "y" only: the output names which one the render asked
  SRC = "<%= remembers?('x') %>,<%= remembers?('y') %>"

  def expect(o)
    id = o.respond_to?(:remembers?, true) ? :q : o.respond_to?(:remembers, true) ? :p : nil
    { q: "true,false", p: "false,true", nil => "false,false" }.fetch(id)
  end

  def check(t, o, what)
    assert_equal expect(o), t.result(o.bind), what
  end

  def test_methods_defined_and_removed_between_renders
    k = fresh_class
    o = k.new
    t = Tpl::ERB.new(SRC, trim_mode: "-")
    check(t, o, "none")
    k.class_eval { def remembers(x) = x == "y" }
    check(t, o, "remembers defined later")
    k.class_eval { def remembers?(x) = x == "x" }
    check(t, o, "remembers? defined later")
    k.class_eval { private :remembers? }
    check(t, o, "remembers? private")
    k.class_eval { undef_method :remembers? }
    check(t, o, "remembers? undefined")
    k.class_eval { remove_method :remembers }
    check(t, o, "remembers removed")
    o.define_singleton_method(:remembers?) { |x| x == "x" }
    check(t, o, "singleton remembers?")
    check(t, k.new, "another object of the class")
    m = Module.new { def remembers(x) = x == "y" }
    k2 = fresh_class
    o2 = k2.new
    check(t, o2, "none (2)")
    k2.include(m)
    check(t, o2, "module included later")
    k2.prepend(Module.new { def remembers?(x) = x == "x" })
    check(t, o2, "module prepended later")
  end

  def test_respond_to_and_respond_to_missing_redefined
    t = Tpl::ERB.new(SRC, trim_mode: "-")
    k = fresh_class
    k.class_eval do
      def remembers?(x) = x == "x"
      def remembers(x) = x == "y"
    end
    o = k.new
    check(t, o, "both")
    k.class_eval { def respond_to?(m, priv = false) = m == :remembers? ? false : super }
    check(t, o, "respond_to? says no to remembers?")
    k.class_eval { remove_method :respond_to? }
    check(t, o, "respond_to? Kernel's again")
    k2 = fresh_class
    k2.class_eval do
      def remembers(x) = x == "y"
      def respond_to_missing?(m, priv = false) = m == :remembers? || super
      def method_missing(m, *a) = m == :remembers? ? a[0] == "x" : super
    end
    o2 = k2.new
    check(t, o2, "remembers? through respond_to_missing?")
    k2.class_eval { remove_method :respond_to_missing? }
    check(t, o2, "respond_to_missing? removed")
  end

  # a receiver-less call of a Kernel function self may define (self_fns, through self_responds):
  # self's own while it has one, Kernel's (tpl's builtin) before and after, as Ruby's ERB calls
  def test_self_function_defined_and_removed_between_renders
    src = "<%= format('%d', 5) %>|<%= Integer('7') %>"
    k = fresh_class
    o = k.new
    t = Tpl::ERB.new(src, trim_mode: "-")
    steps = [-> {}, -> { k.class_eval { def format(*) = "F" } }, -> { k.class_eval { private :format } },
             -> { k.class_eval { def Integer(x) = "I#{x}" } }, -> { k.class_eval { remove_method :format } },
             -> { o.define_singleton_method(:format) { |*| "S" } },
             -> { k.class_eval { def respond_to_missing?(m, p = false) = m == :Integer ? false : super } },
             -> { k.class_eval { def respond_to?(m, p = false) = super } }, -> { k.class_eval { remove_method :Integer } }]
    steps.each_with_index do |step, i|
      step.call
      assert_equal ERB.new(src, trim_mode: "-").result(o.bind), t.result(o.bind), "step #{i}"
    end
  end

  # self's @ivars read before Ruby code first runs (a view with a remembers method) are taken up
  # front by one walk over self's @ivars (render_body, ivar_first): set, nil, unset, removed and
  # set again between renders, read before and after remembers, on an object with few @ivars
  # and one with many (rb_ivar_get then), each render against Ruby's ERB
  def test_early_ivars_walked_between_renders
    k = Class.new do
      attr_accessor :seen
      def remembers(x) = (@seen = x; true)
      def bind = binding
    end
    src = "<%= @a %>|<%= @b.inspect %>|<%= @c.inspect %>|<%= @z.inspect %>|<%= defined?(@b).inspect %>|<%= defined?(@c).inspect %>" \
          "<% if remembers('x') %>|<%= @a %>|<%= @c.inspect %>|<%= defined?(@c).inspect %><% end %>"
    o = k.new
    o.instance_variable_set(:@z, "zz")
    o.instance_variable_set(:@a, "A")
    o.instance_variable_set(:@b, nil)
    t = Tpl::ERB.new(src, trim_mode: "-")
    steps = [-> {}, -> {}, -> { o.remove_instance_variable(:@b) }, -> { o.instance_variable_set(:@c, [1, "c"]) },
             -> { o.instance_variable_set(:@b, { "k" => 2 }) }, -> { o.remove_instance_variable(:@a) },
             -> { 20.times { |i| o.instance_variable_set(:"@x#{i}", i) } }, -> { o.instance_variable_set(:@a, "A2") },
             -> { o.remove_instance_variable(:@z) }]
    steps.each_with_index do |step, i|
      step.call
      assert_equal ERB.new(src, trim_mode: "-").result(o.bind), t.result(o.bind), "step #{i}"
    end
  end
end
