# Tpl::ERB#result(binding) and self's state (session 32, issue 20's probe): an @ivar is self's
# and a local the binding's, never mixed; a change in place of the binding's object is a located
# refusal (Ruby's ERB changes the caller's object, tpl would change a copy); @ivars changed by
# Ruby code during the render (a method of self, a remembers? method, a host object's method)
# read changed, as Ruby's ERB reads them; frozen Strings stay frozen; Strings in UTF-16/32.
require "minitest/autorun"
require "erb"
require "tpl"

class TestBinding < Minitest::Test
  # each of ERB and Tpl::ERB on a fresh view: [result, @ivars after] or [exception class, message]
  class View
    attr_reader :s, :n

    def initialize
      @s = +"iv"
      @h = { a: 1 }
      @a = [1]
      @n = 1
      @frozen = "fro"
      @frozen.freeze
      @counter = Counter.new(self)
      @names = [+"ann", +"bo"]
    end

    def bump = (@n += 1; "")
    def app = (@s << "z"; "")
    def remembers?(_w) = (@n += 10; true)
    def set_n(v) = @n = v
    def drop_n = (remove_instance_variable(:@n); "")

    def run(src, cls)
      s = +"loc"
      h = { z: 9 }
      a = [9]
      out = cls.new(src, trim_mode: "-").result(binding)
      [out, @s, @h, @a, @n, s, h, a]
    rescue StandardError, SyntaxError => e
      [e.class, e.message]
    end
  end

  # a host object among self's @ivars whose method changes self's @n
  class Counter
    def initialize(view) = @view = view
    def tick = (@view.set_n(@view.n + 100); "t")
  end

  def both(src) = [ERB, Tpl::ERB].map { |k| View.new.run(src, k) }

  def assert_same_as_erb(src)
    want, got = both(src)
    assert_equal want, got, src
  end

  def assert_refused(src, pattern)
    want, got = both(src)
    refute_kind_of Class, want[0], "#{src}: Ruby's ERB renders it"
    assert_equal ::SyntaxError, got[0], "#{src}: #{got.inspect}"
    assert_match pattern, got[1], src
    assert_match(/\A\(erb\):1:\d+: error: unsupported Ruby construct/, got[1], src)
  end

  def test_ivar_changed_in_place_is_refused_not_the_local
    { "<% @s << 'x' %><%= @s %>" => /`<<' changes `@s' in place/,
      "<% @h[:k] = 1 %><%= @h %>" => /`\[\]=' changes `@h' in place/,
      "<% @a.push(1) %><%= @a %>" => /`push' changes `@a' in place/,
      "<% @s.concat('y') %><%= @s %>" => /`concat' changes `@s'/,
      "<% @h.merge!(b: 2) %><%= @h %>" => /`merge!' changes `@h'/,
      "<% @a.clear %><%= @a %>" => /`clear' changes `@a'/,
      "<% @s.upcase! %><%= @s %>" => /`upcase!' changes `@s'/,
      "<% x = @a; x << 2 %><%= @a %>" => /`<<' changes `@a'/,
      "<% s << 'x' %><%= s %>|<%= @s %>" => /`<<' changes `s' in place, the binding's object \(a local variable/,
      "<% h[:q] = 2 %><%= h %>" => /`\[\]=' changes `h'/,
      "<% @names.each { |x| x << '!' } %><%= @names %>" => /String#<< on a string another name may hold/,
      "<% @names.each { |x| x.upcase! } %><%= @names %>" => /String#upcase! on `x', which another name may hold/,
      "<% @s = 'new' %><%= @s %>" => /`@s' assigned: an instance variable of the binding's self/,
      "<% @n += 1 %><%= @n %>" => /`@n' assigned/,
      # send of a Symbol literal is the direct call, refused alike
      "<% @a.send(:push, 1) %><%= @a %>" => /`push' changes `@a' in place/,
      "<% @h.send(:[]=, 'k', 5) %><%= @h %>" => /`\[\]=' changes `@h' in place/,
      "<% @s.public_send(:upcase!) %><%= @s %>" => /`upcase!' changes `@s'/,
      "<% s.__send__(:<<, 'x') %><%= s %>" => /`<<' changes `s' in place/,
      "<% @a.send(:map!) { |x| x } %><%= @a %>" => /`map!' changes `@a'/ }.each { |src, pat| assert_refused(src, pat) }
  end

  def test_ivar_and_local_of_one_name_stay_apart
    ["<%= @s %>|<%= s %>", "<% t = @s.dup; t << '!' %><%= t %>|<%= @s %>|<%= s %>",
     "<% l = @a + [2] %><%= l.inspect %><%= a.inspect %><%= @a.inspect %>", "<%= @h[:a] %><%= h[:z] %>",
     "<% s2 = s + 'x' %><%= s2 %><%= @s %>", "<%= [@s, s].join(',') %>"].each { |src| assert_same_as_erb(src) }
  end

  def test_ivars_read_after_ruby_code_changed_them
    ["<%= @n %><% bump %><%= @n %>", "<%= @n %><%= bump %><%= @n %><%= bump %><%= @n %>",
     "<%= @s %><% app %><%= @s %>|<%= s %>", "<%= @n %><%= remembers?('x') %><%= @n %>",
     "<%= @n %><% if remembers?('x') %>y<% end %><%= @n %>",
     # an @ivars-only template (read before the run when nothing can change them) with a host object
     "<%= @n %><%= @counter.tick %><%= @n %>", "<%= @n %>|<%= @counter.tick %>|<%= @n + 1 %>",
     # a special constant read before is kept after Ruby code ran only while the @ivar's VALUE is
     # the same (set to the same, another, true/false/nil/a Float, removed)
     "<%= @n %><% set_n(1) %><%= @n %><% set_n(2) %><%= @n %><% set_n(2) %><%= @n %>",
     "<%= @n %><% set_n(true) %><%= @n %><% set_n(true) %><%= @n %><% set_n(false) %><%= @n %><% set_n(nil) %><%= @n.inspect %>",
     "<%= @n %><% set_n(2.5) %><%= @n %><% set_n(2.5) %><%= @n %><% set_n(1) %><%= @n %>",
     "<%= @n %><% drop_n %><%= @n.inspect %><% set_n(3) %><%= @n %>",
     "<% if @n == 1 && remembers?('x') %><%= @n %><% end %><%= @n %><%= bump %><%= @n %>"].each { |src| assert_same_as_erb(src) }
  end

  # @ivars read live (a remembers? method on self) convert their Strings into the render's own
  # copies (the context's scratch blocks, up to 4 KiB each): Ruby code that changes them in place
  # between two reads (a method of self, remembers?) is read changed after it; the same for what
  # self's methods return. (Not covered, as it differs before and after this: a local holding
  # an @ivar's String or Hash from before such a call keeps the value it had, where Ruby's
  # ERB sees the change: `<% x = @h['a'] %><% change %><%= x %>`.)
  class CopyView
    def initialize
      @hs = { "a" => +"one", "b" => +"two" }
      @rows = [{ "x" => +"r0" }, { "x" => +"r1" }]
      @big = +("b" * 5000)
      @fz = "frozen".freeze
      @n = 0
    end

    def change = (@hs["a"] << "!"; @rows[0]["x"].replace("R0"); @big << "y"; @hs["c"] = +"three"; "")
    def remembers?(w) = (change if w == "change"; @n += 1; true)
    def rows = @rows
    def big = @big
    def fz = @fz

    def run(src, cls) = cls.new(src, trim_mode: "-").result(binding)
  end

  def test_ivars_read_live_are_copies_read_again
    ["<%= @hs['a'] %>|<% change %><%= @hs['a'] %>|<%= @hs['c'] %>",
     "<%= @big.size %><% change %><%= @big.size %>|<%= @big[-2, 2] %>|<%= @rows[0]['x'] %>",
     "<% if remembers?('x') %><%= @hs['a'] %><% end %><% if remembers?('change') %><%= @hs['a'] %><%= @hs.size %><% end %><%= @n %>",
     # (a template of @ivars and remembers? only: read from the state until remembers? first runs)
     "<%= @hs['a'] %><%= @rows[0]['x'] %><%= @big.size %><% if remembers?('change') %><%= @hs['a'] %>|<%= @rows[0]['x'] %>|<%= @big.size %>|<%= @hs['c'] %><% end %><%= @n %>",
     "<% @rows.each do |h| %><%= h['x'] %><%= @hs['a'] %><% if remembers?('change') %><%= @rows[0]['x'] %><%= @hs['a'] %><% end %>;<% end %><%= @hs.size %>",
     "<%= @n %><%= @fz %><%= remembers?('x') %><%= @n %><%= @fz.frozen? %><%= @none.inspect %><%= defined?(@none).inspect %><%= defined?(@n) %>",
     "<%= @fz.frozen? %><% change %><%= @fz.frozen? %>|<%= fz.frozen? %>|<%= @hs['a'].frozen? %>",
     "<%= rows.size %><%= rows[1]['x'] %><% change %><%= rows[0]['x'] %>|<%= big.size %>",
     "<% @rows.each do |h| %><%= h['x'] %><% change %><%= @rows[0]['x'] %>;<% end %>"].each do |src|
      assert_equal CopyView.new.run(src, ERB), CopyView.new.run(src, Tpl::ERB), src
      t = Tpl::ERB.new(src, trim_mode: "-") # (again: the Template's renders learn which @ivars to read up front)
      3.times { assert_equal CopyView.new.run(src, ERB), t.result(CopyView.new.instance_eval { binding }), src }
    end
  end

  # defined?(@x) on a view whose remembers? sets or removes @ivars: self's answer at that point of
  # the render, before and after Ruby code ran (the @ivars read up front until then, live after)
  class DefView
    def initialize = (@n = 1; @s = "a")
    def remembers?(w) = (w == "rm" ? remove_instance_variable(:@n) : (@late = 2); true)
    def run(src, cls) = cls.new(src).result(binding)
  end

  def test_defined_ivar_before_and_after_ruby_code
    ["<%= defined?(@n).inspect %><%= defined?(@late).inspect %>",
     "<%= defined?(@n).inspect %><%= remembers?('x') %><%= defined?(@late).inspect %><%= @late %>",
     "<%= @n %><%= remembers?('rm') %><%= defined?(@n).inspect %><%= @n.inspect %>",
     "<%= remembers?('x') %><%= defined?(@late).inspect %><%= @late %><%= defined?(@s) %>",
     "<%= defined?(@late).inspect %><%= @s %><%= remembers?('x') %><%= defined?(@late).inspect %>"].each do |src|
      assert_equal DefView.new.run(src, ERB), DefView.new.run(src, Tpl::ERB), src
      t = Tpl::ERB.new(src) # (the same Template again: its renders learn which @ivars to read up front)
      3.times { assert_equal DefView.new.run(src, ERB), t.result(DefView.new.instance_eval { binding }), src }
    end
  end

  # self.name(args): a call of self's method, private ones too (was a compile error); self as a
  # value stays a located refusal
  class SelfView
    def initialize = @a = 1
    def pub(x = 1) = "pub#{x}"
    def bind = binding
    private def priv(x) = "priv#{x}"
  end

  def test_self_dot_method
    b = SelfView.new.bind
    ["<%= self.priv(2) %>", "<%= self.pub %>", "<%= self.pub(3) %>", "<%= self.pub 4 %>", "<%= self.class %>",
     "<%= self.respond_to?(:pub) %>", "<% pub = 'loc' %><%= self.pub %> <%= pub %>", "<%= [1].map { |x| self.pub(x) }.join %>",
     "<%= defined?(self) %> <%= defined?(self.pub) %> <%= defined?(self.nope).inspect %>",
     "<%= defined?(pub) %>|<%= defined?(priv(1)) %>|<%= defined?(nope).inspect %>|<%= defined?(pub(zz)).inspect %>"].each do |src|
      # (a fresh binding each: Ruby's keeps the locals a template assigned, `pub = 'loc'`)
      b = SelfView.new.bind
      assert_equal ERB.new(src).result(b), Tpl::ERB.new(src).result(SelfView.new.bind), src
    end
    e = assert_raises(NoMethodError) { Tpl::ERB.new("<%= self.nope %>").result(b) }
    assert_match(/undefined method `nope' for #<TestBinding::SelfView/, e.message)
    e = assert_raises(::SyntaxError) { Tpl::ERB.new("<%= self %>") }
    assert_match(/\A\(erb\):1:5: error: unsupported Ruby construct 'self'/, e.message)
  end

  def test_frozen_strings
    fz = "fro".freeze
    h = { k: "v".freeze, m: +"w" }
    o = Struct.new(:name).new("nm".freeze)
    b = binding
    ["<%= fz.frozen? %>", "<%= h[:k].frozen? %>|<%= h[:m].frozen? %>", "<% x = h[:k] %><%= x.frozen? %>",
     "<%= o.name.frozen? %>", "<%= fz.dup.frozen? %>", "<% y = fz.dup; y << '!' %><%= y %>", "<%= 'lit'.frozen? %>",
     "<%= :s.frozen? %>", "<%= @frozen.frozen? %>", "<%= [fz].first.frozen? %>"].each do |src|
      assert_equal ERB.new(src).result(b), Tpl::ERB.new(src).result(b), src
    end
    ["<% o.name << 'x' %>", "<%= o.name.upcase! %>", "<% h.fetch(:k) << 'x' %>"].each do |src|
      want = assert_raises(FrozenError, src) { ERB.new(src).result(b) }
      got = assert_raises(FrozenError, src) { Tpl::ERB.new(src).result(b) }
      assert_includes got.message, want.message, src
    end
  end

  def test_utf16_values_are_ruby_strings_and_printing_them_is_refused
    u16 = "h\u00e9".encode("UTF-16LE")
    a32 = "ab".encode("UTF-32BE")
    b = binding
    ["<%= u16.size %>", "<%= u16.bytesize %>", "<%= u16.encoding %>", "<%= u16.encode('UTF-8') %>",
     "<%= [u16].size %>", "<%= a32.size %>", "<%= u16.inspect %>"].each do |src|
      assert_equal ERB.new(src).result(b), Tpl::ERB.new(src).result(b), src
    end
    ["x<%= u16 %>", "x<%= a32 %>", "<%= u16 %>", "<%= a32 %>y"].each do |src|
      e = assert_raises(Encoding::CompatibilityError, src) { Tpl::ERB.new(src).result(b) }
      assert_match(/\Aincompatible character encodings: UTF-8 and UTF-(16LE|32BE) \(tpl: raised while rendering \(erb\), line 1/, e.message)
    end
    # Tpl::Template converts them
    assert_equal "x h\u00e9", Tpl::Template.new("x <%= v %>", syntax: :erb).render(v: u16)
  end

  # (issue 20, session 33) a binding local only defined? names is passed in: "local-variable";
  # a constant of the caller's program (a Struct) is a located refusal, not a NameError a rescue takes
  RbS = Struct.new(:a)
  def test_defined_local_and_caller_constants
    q = +"loc"
    b = binding
    ["<%= defined?(q).inspect %>", "<%= defined?(q) %><%= q %>", "<%= defined?(zz).inspect %>",
     "<% if defined?(q) %>y<% end %>"].each { |src| assert_equal ERB.new(src).result(b), Tpl::ERB.new(src).result(b), src }
    ["<%= RbS.new(1).a %>", "<% begin %><%= RbS.new(1).a %><% rescue NameError %>caught<% end %>"].each do |src|
      assert_equal "1", ERB.new(src).result(b), src
      e = assert_raises(RuntimeError, src) { Tpl::ERB.new(src).result(b) }
      assert_match(/\A\(erb\):1:\d+: error: unsupported Ruby construct: the constant RbS /, e.message, src)
    end
  end

  # (issue 20, session 33) a local holding self's or the binding's String, Array or Hash, read after
  # Ruby code ran (a method of self), is a located refusal where Ruby's ERB reads the object as that
  # code changed it in place (tpl holds a copy); read before it, or holding a new object or a
  # number, it renders as Ruby's
  class HeldView
    def initialize = @h = { "a" => +"one" }
    def change = (@h["a"] << "!"; "")
    def chg(o) = (o << "!"; "")
    def run(src, k)
      q = +"loc"
      r = 5
      k.new(src, trim_mode: "-").result(binding)
    rescue StandardError, SyntaxError => e
      [e.class, e.message]
    end
  end

  def test_held_copies_after_ruby_code
    ["<% x = @h['a'] %><%= x %><% change %><%= @h['a'] %>", "<% x = @h['a'].upcase %><% change %><%= x %>",
     "<% x = @h.size %><% change %><%= x %>", "<% x = r %><% chg(q) %><%= x %><%= r %>",
     "<%= q %><% x = @h['a'] %><%= x %>", "<% x = @h['a'] %><% 2.times do |i| %><%= x %><%= i %><% end %>",
     "<% x = @h['a'] %><% [1].each do |i| %><% y = i %><%= x %><%= y %><% [2].each { |j| %><%= j %><% } %><% end %>"].each do |src|
      assert_equal HeldView.new.run(src, ERB), HeldView.new.run(src, Tpl::ERB), src
    end
    { "<% x = @h['a'] %><% change %><%= x %>" => "x", "<% x = @h %><% change %><%= x['a'] %>" => "x",
      "<% chg(q) %><%= q %>" => "q", "<%= q %><% chg(q) %><%= q %>" => "q", "<% x = q %><% chg(q) %><%= x %>" => "x",
      "<% x = @h['a'] %><% change %><% begin %><%= x %><% rescue => e %>r<% end %>" => "x",
      # a loop whose body runs Ruby code: a read in it comes after that code on the next iteration
      "<% x = @h['a'] %><% 2.times do %><%= x %><% change %><% end %>" => "x",
      "<% x = @h['a'] %><% [1, 2].each do |i| %><%= x %><% change %><% end %>" => "x",
      "<% x = @h['a'] %><% for i in [1, 2] %><%= x %><% change %><% end %>" => "x",
      "<% x = @h['a'] %><% n = 0 %><% while n < 2 %><%= x %><% change %><% n += 1 %><% end %>" => "x" }.each do |src, name|
      want, got = HeldView.new.run(src, ERB), HeldView.new.run(src, Tpl::ERB)
      refute_kind_of Array, want, src
      assert_equal TypeError, got[0], "#{src}: #{got.inspect}"
      assert_match(/\A\(erb\):1:\d+: error: unsupported Ruby construct: `#{name}' read after Ruby code ran/, got[1], src)
    end
  end

  # (issue 20, session 35) a local made by a method that returns the object or its parts (fetch, dig,
  # first, values_at, values, to_s, dup, select, map...), by || / && / ?: of such, in parentheses or
  # in an Array or Hash literal
  # is held too: read after Ruby code ran it is the located refusal; a new object (upcase) renders
  def test_held_aliases_after_ruby_code
    ["<% x = @h.fetch('a') %>", "<% x = @h.dig('a') %>", "<% x = @h['z'] || @h['a'] %>", "<% x = @h.values_at('a') %>",
     "<% x = @h.values %>", "<% x = true ? @h['a'] : 1 %>", "<% x = (@h['a']) %>", "<% x = @h['a']&.itself %>",
     "<% x = @h['a'].to_s %>", "<% x = @h.to_a.first.last %>", "<% x = @h.map { |k, v| v } %>",
     "<% x = @h.select { |k, v| v } %>", "<% x = r && @h.dup %>", "<% x = [1, @h['a']] %>", "<% x = { k: @h } %>"].each do |head|
      src = "#{head}<% change %><%= x %>"
      want, got = HeldView.new.run(src, ERB), HeldView.new.run(src, Tpl::ERB)
      refute_kind_of Array, want, src
      assert_equal TypeError, got[0], "#{src}: #{got.inspect}"
      assert_match(/\A\(erb\):1:\d+: error: unsupported Ruby construct: `x' read after Ruby code ran/, got[1], src)
    end
    ["<% x = @h['a'].upcase %><% change %><%= x %>", "<% x = @h.fetch('a') %><%= x %><% change %>",
     "<% x = @h.values.size %><% change %><%= x %>"].each do |src|
      assert_equal HeldView.new.run(src, ERB), HeldView.new.run(src, Tpl::ERB), src
    end
  end

  # local_variables with a binding: a located refusal (Ruby's holds _erbout and the template's locals)
  def test_local_variables_refused
    q = 1
    b = binding
    ["<%= local_variables.inspect %>", "<% z = q %><%= local_variables().size %>"].each do |src|
      refute_nil ERB.new(src).result(b)
      e = assert_raises(RuntimeError, src) { Tpl::ERB.new(src).result(b) }
      assert_match(/\A\(erb\):1:\d+: error: unsupported Ruby construct: local_variables with a binding/, e.message, src)
    end
  end

  # (issue 20 #4) a change in place of a frozen @ivar or binding local is Ruby's FrozenError when it runs
  # (a rescue takes it), as Ruby's ERB raises it; an unfrozen one is still refused, when it runs (a
  # branch not taken renders)
  class FrozenView
    def initialize = (@list = [1, 2].freeze; @s = "ab".freeze; @h = { a: 1 }.freeze; @m = [1])
    def run(src, k)
      loc = [3].freeze
      ls = "q".freeze
      k.new(src, trim_mode: "-").result(binding)
    rescue StandardError, SyntaxError => e
      [e.class, e.message]
    end
  end

  def test_frozen_ivar_changed_in_place_is_frozen_error
    rescued = ->(code) { "<% begin %><% #{code} %>no<% rescue => e %><%= e.class %>: <%= e.message %><% end %>" }
    ["@list << 1", "@list.push(3)", "@list.clear", "@list.sort!", "@s << 'x'", "@s.upcase!", "@s.concat('y')", "@h[:b] = 2",
     "@h.merge!(c: 1)", "@h.delete(:a)", "loc << 1", "ls << 'z'", "x = @list; x << 1", "@list.freeze"].each do |code|
      src = rescued.(code) + "|<%= @list %><%= @s %><%= @h %><%= loc %><%= ls %>"
      want = FrozenView.new.run(src, ERB)
      assert_kind_of String, want, src
      assert_equal want, FrozenView.new.run(src, Tpl::ERB), src
    end
    ["<%= (@list << 1 rescue 'r') %>", "<% if false %><% @m << 1 %><% end %>ok<%= @m %>",
     "<% begin %><% @list << 1 %><% rescue FrozenError => e %><%= e.message %><% end %>"].each do |src|
      assert_equal FrozenView.new.run(src, ERB), FrozenView.new.run(src, Tpl::ERB), src
    end
    want, got = [ERB, Tpl::ERB].map { |k| FrozenView.new.run("<% @list << 1 %>", k) }
    assert_equal [FrozenError, FrozenError], [want[0], got[0]]
    assert_includes got[1], want[1]
    got = FrozenView.new.run("<% begin %><% @m << 1 %><% rescue => e %>caught<% end %>", Tpl::ERB)
    assert_equal ::SyntaxError, got[0]
    assert_match(/\A\(erb\):1:\d+: error: unsupported Ruby construct: `<<' changes `@m' in place/, got[1])
  end

  # (issue 20 #3) a comparison of host objects that fails names their Ruby class, as Ruby's does
  CmpItem = Struct.new(:a)
  class CmpView
    def initialize = @xs = [CmpItem.new(2), CmpItem.new(1)]
    def run(src, k)
      ys = [CmpItem.new(1), 3]
      k.new(src).result(binding)
    rescue StandardError => e
      [e.class, e.message]
    end
  end

  def test_comparison_of_host_objects_names_their_class
    ["<%= @xs.sort.size %>", "<%= @xs.max.a %>", "<%= @xs.min.a %>", "<%= ys.sort.size %>"].each do |src|
      want, got = [ERB, Tpl::ERB].map { |k| CmpView.new.run(src, k) }
      assert_equal ArgumentError, want[0], src
      assert_equal ArgumentError, got[0], src
      assert_includes got[1], want[1], src
    end
    src = "<% begin %><% @xs.sort %><% rescue ArgumentError => e %><%= e.message %><% end %>|<%= @xs.sort_by(&:a).map(&:a).inspect %>"
    assert_equal CmpView.new.run(src, ERB), CmpView.new.run(src, Tpl::ERB)
  end

  # (issue 20 #3) a rescued exception's own methods beyond Exception's (NameError#name, KeyError#key,
  # StopIteration#result...) are a located refusal, which no rescue takes, not a NoMethodError
  def test_rescued_exception_subclass_methods_refused
    b = binding
    { "<% begin %><% zork %><% rescue NameError => e %><%= e.name.inspect %><% end %>" => "NameError#name",
      "<% begin %><% zork(1) %><% rescue NoMethodError => e %><%= e.name %><% end %>" => "NameError#name",
      "<% begin %><% {}.fetch(:k) %><% rescue KeyError => e %><%= e.key.inspect %><% end %>" => "KeyError#key",
      "<% begin %><% {}.fetch(:k) %><% rescue KeyError => e %><%= (e.receiver rescue 'r') %><% end %>" => "KeyError#receiver" }.each do |src, what|
      refute_nil ERB.new(src).result(b)
      e = assert_raises(Exception, src) { Tpl::ERB.new(src).result(b) }
      assert_match(/\A\(erb\):1:\d+: error: unsupported Ruby construct: #{Regexp.escape(what)} is not implemented by tpl/, e.message, src)
    end
    src = "<% begin %><% zork %><% rescue NameError => e %><%= e.class %>|<%= e.message[0, 40] %><% end %>"
    assert_equal ERB.new(src).result(b), Tpl::ERB.new(src).result(b)
  end

  # (issue 20 #2) a bare name between a held local's assignment and its read is Ruby code only when it
  # is a method of self when it runs: the binding's local `q` is not, so the read renders as Ruby's;
  # self's method `change` (also as a bare name) still makes the read a located refusal
  def test_held_local_after_a_bare_name
    ["<% x = @h['a'] %><%= q %><%= x %>", "<% x = @h['a'] %><%= q %><%= r %><%= x %><%= q %><%= x %>",
     "<% x = @h %><%= q %><%= x['a'] %>", "<% x = q %><%= r %><%= x %>",
     "<% x = @h['a'] %><% [1, 2].each do |i| %><%= q %><%= x %><%= i %><% end %>",
     "<% x = @h['a'] %><% if r > 1 %><%= q %><% end %><%= x %>"].each do |src|
      want = HeldView.new.run(src, ERB)
      assert_kind_of String, want, src
      assert_equal want, HeldView.new.run(src, Tpl::ERB), src
    end
    ["<% x = @h['a'] %><%= q %><% change %><%= x %>", "<% x = @h['a'] %><%= change %><%= q %><%= x %>"].each do |src|
      got = HeldView.new.run(src, Tpl::ERB)
      assert_equal TypeError, got[0], "#{src}: #{got.inspect}"
      assert_match(/\A\(erb\):1:\d+: error: unsupported Ruby construct: `x' read after Ruby code ran/, got[1], src)
    end
  end
end
