# Tpl::ERB against Ruby's own ERB in the same process: byte-equal outputs for the same binding
# (locals, instance variables and methods of self, blocks, helpers), result_with_hash, trim
# modes, errors, threads, and no leaks (issue 20).
require "minitest/autorun"
require "erb"
require "tpl"

# A top-level helper: a private method of Object, so ERB templates of any binding call it.
def shout(s) = "#{s.upcase}!"

class TestERB < Minitest::Test
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

  def test_result_default_toplevel
    src = "<%= shout('top') %>"
    assert_equal ERB.new(src, trim_mode: "-").result, Tpl::ERB.new(src, trim_mode: "-").result
  end

  def test_other_trim_modes_refused
    [nil, ">", "<>", "%", "%-"].each do |mode|
      e = assert_raises(ArgumentError) { Tpl::ERB.new("x", trim_mode: mode) }
      assert_includes e.message, mode.inspect
    end
  end

  def test_unknown_name_is_name_error_with_location
    e = assert_raises(Tpl::NameError) { Tpl::ERB.new("ok\n<%= nobody %>", trim_mode: "-").result_with_hash({}) }
    assert_equal 2, e.line
    assert_equal 5, e.column
    assert_match(/undefined local variable or method `nobody'/, e.message)
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
  # an unset @ivar is nil; a String in another encoding is converted; the value is read once
  # per render (changing it between renders is seen).
  class Scalars
    def initialize
      @s = "caf\u00e9"
      @a = "plain"
      @bin = "bytes".b
      @latin = "\xE9t\xE9".dup.force_encoding("ISO-8859-1")
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
    src = "<%= @s %>|<%= @a %>|<%= @bin %>|<%= @latin.encode('UTF-8') %>|<%= @i + 1 %>|<%= @big %>|<%= @f * 2 %>|" \
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
      @b = "caf\xE9".dup.force_encoding("ISO-8859-1")
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
    compact = GC.respond_to?(:auto_compact=) && (GC.auto_compact rescue nil)
    begin
      GC.auto_compact = true if GC.respond_to?(:auto_compact=)
      GC.stress = true
      3.times do |i|
        got = t.result(b)
        GC.stress = false
        assert_equal want, got, "round #{i}"
        GC.stress = true
      end
    ensure
      GC.stress = false
      GC.auto_compact = compact if GC.respond_to?(:auto_compact=) && !compact.nil?
    end
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
