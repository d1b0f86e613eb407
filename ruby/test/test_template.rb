# Tpl::Template: native values, host objects, errors, .tplb, options, threads (issue 20).
require "minitest/autorun"
require "tpl"
require "json"
require "erb"
require "tmpdir"
require_relative "helper"

class TestTemplate < Minitest::Test
  include TplTestHelper

  Person = Struct.new(:name, :age) do
    def greet(greeting = "Hello", punct: "!") = "#{greeting}, #{name}#{punct}"
    def to_s = "Person(#{name})"
  end

  def test_jinja_hash_symbol_and_string_keys
    t = Tpl::Template.new("Hi {{ user.name }} {{ n + 1 }}")
    assert_equal "Hi Ann 2", t.render(user: { name: "Ann" }, n: 1)
    assert_equal "Hi Bo 3", t.render({ "user" => { "name" => "Bo" }, "n" => 2 })
  end

  def test_native_values_jinja
    t = Tpl::Template.new("{{ a }}|{{ b }}|{{ c }}|{{ d }}|{{ e }}|{{ f }}|{{ g|join(',') }}|{{ h }}")
    out = t.render(a: 1, b: 2.5, c: true, d: nil, e: "é", f: :sym, g: [1, "x"], h: { "k" => [1, 2] })
    assert_equal "1|2.5|True|None|é|sym|1,x|{'k': [1, 2]}", out
  end

  def test_native_values_erb_inspect
    t = Tpl::Template.new("<%= h.inspect %> <%= r.to_a.inspect %> <%= r2.inspect %> <%= big %> <%= s %>", syntax: :erb)
    out = t.render(h: { a: 1, "b" => [nil, true, 1.5] }, r: (1..3), r2: ("a"..."c"), big: 2**40, s: "x".encode("ISO-8859-1"))
    assert_equal %({:a=>1, "b"=>[nil, true, 1.5]} [1, 2, 3] "a"..."c" 1099511627776 x), out
  end

  def test_hash_order_kept
    t = Tpl::Template.new("<% h.each do |k, v| %><%= k %>=<%= v %>;<% end %>", syntax: :erb)
    assert_equal "z=1;a=2;m=3;", t.render(h: { "z" => 1, "a" => 2, "m" => 3 })
  end

  # an Array of Hashes of Strings is made in one call (tpl_ext.c strmaps_val) when the render
  # borrows its Strings; any other item, key or value converts the Array item by item: the same
  # output either way, embedded and long Strings, empty Hashes, mutation between renders, and
  # the errors of a cycle or invalid bytes
  def test_array_of_string_hashes
    src = "<% l.each do |h| %><%= h[\"a\"] %>|<%= h.size %>|<%= h.inspect %>;<% end %><%= l.size %>"
    t = Tpl::Template.new(src, syntax: :erb)
    long = "é" * 40
    l = [{ "a" => "x", "b" => "y" }, {}, { "a" => long }]
    assert_equal %(x|2|{"a"=>"x", "b"=>"y"};|0|{};#{long}|1|{"a"=>"#{long}"};3), t.render(l: l)
    l[0]["a"] << "z"
    l[1]["c"] = "w"
    assert_equal %(xz|2|{"a"=>"xz", "b"=>"y"};|1|{"c"=>"w"};#{long}|1|{"a"=>"#{long}"};3), t.render(l: l)
    assert_equal %(x|2|{"a"=>"x", "b"=>1};z|1|{"a"=>"z"};2), t.render(l: [{ "a" => "x", "b" => 1 }, { "a" => "z" }])
    assert_equal %(x|1|{:a=>"x"};z|1|{"a"=>"z"};2), t.render(l: [{ a: "x" }, { "a" => "z" }])
    assert_equal %(x|1|{"a"=>"x"};1), t.render(l: [{ "a" => "x".encode("UTF-16LE").encode("UTF-8") }])
    # (an item past the first that is no plain Hash: item by item after all)
    [[{ "a" => "x" }, Hash.new(0).merge!("a" => "q")], [{ "a" => "x" }, { "a" => "y" }, "sa"], [{ "a" => "x" }, { "a" => "é" }, { "a" => 1 }]].each do |items|
      assert_equal ERB.new(src).result_with_hash(l: items), t.render(l: items), items.inspect
    end
    h = { "a" => "q" }
    h["self"] = [h]
    assert_raises(ArgumentError) { t.render(l: [h]) }
    assert_raises(EncodingError) { t.render(l: [{ "a" => "\xff".b }]) }
    j = Tpl::Template.new("{% for m in l %}{{ m.a }}{{ m|length }}{% endfor %}")
    assert_equal "x2é1", j.render(l: [{ "a" => "x", "b" => "y" }, { "a" => "é" }])
  end

  # On Ruby 3.1 the conversion reads a Hash's table in place (tpl_ext.c HASH_EACH): up to 8 pairs
  # (with a bound and deleted pairs), or an st table past 8 (deleted entries marked in their
  # hash); the same entries in the same order as Ruby's each, at the top and nested, Symbol,
  # String and other keys, emptied Hashes, and with Strings in another encoding converted under
  # GC.stress (a GC during the walk may move a small table out of the transient heap)
  def test_hash_tables_read_in_place
    src = "<% s.each do |k, v| %><%= k.inspect %>=<%= v.inspect %>,<% end %>|<%= s.size %>|" \
          "<% l.each do |h| %><%= h.inspect %>;<% end %>|<%= n.inspect %>|<%= e.keys.inspect %><%= e.values.map(&:size) %>"
    small = { "a" => "1", "b" => "2", "c" => "3", "d" => "4" }
    small.delete("a")
    small.delete("c")
    small["e"] = "5"
    big = (1..20).to_h { |i| ["k#{i}", i.to_s] }
    %w[k1 k2 k9 k20].each { |k| big.delete(k) }
    big["k21"] = "x"
    shrunk = (1..12).to_h { |i| [i, :"v#{i}"] }
    (1..10).each { |i| shrunk.delete(i) }
    cleared = { "x" => "y" }
    cleared.clear
    latin = { "a" => "caf\xE9".dup.force_encoding("ISO-8859-1"), "b" => "ok" }
    latin.delete("b")
    latin["c"] = "é" * 30
    l = [small, { "q" => "r" }.tap { |h| h.delete("q") }, { "u" => "v", "w" => "z" }, big, shrunk, cleared]
    top = (1..14).to_h { |i| ["t#{i}", i] }
    top.delete("t3")
    top.merge!("s" => small, "l" => l, "n" => { n: 1, "m" => 2, 3 => [4] }, "e" => latin)
    want = ERB.new(src).result_with_hash(top)
    t = Tpl::Template.new(src, syntax: :erb)
    3.times { assert_equal want, t.render(top) }
    under_gc_stress(3) { t.render(top) }.each { |got| assert_equal want, got }
    symtop = { s: small, l: l, n: shrunk, e: cleared }
    symtop.delete(:e)
    symtop[:e] = latin
    assert_equal ERB.new(src).result_with_hash(symtop), t.render(symtop)
  end

  # a Hash whose keys Ruby keeps apart but tpl's map takes as one (a Symbol and a String of one
  # name, one text in two encodings, 1 and 1.0) is refused: the second key replaced the first
  # and the template rendered other text than ERB's, silently; keys tpl keeps apart still render
  def test_hash_keys_tpl_takes_as_one_refused
    src = "<%= n.inspect %>|<%= n.size %>"
    t = Tpl::Template.new(src, syntax: :erb)
    [{ n: 1, "n" => 2, 3 => [4] }, { "n" => 2, n: 1 }, { 1 => "a", 1.0 => "b" }, { "é" => 1, "é".encode("ISO-8859-1") => 2 },
     { 2**70 => 1, (2**70).to_f => 2 }].each do |h|
      e = assert_raises(ArgumentError, h.inspect) { t.render(n: h) }
      assert_match(/keys tpl takes as one/, e.message)
      assert_raises(ArgumentError, EncodingError, h.inspect) { Tpl::ERB.new(src).result_with_hash(n: h) }
    end
    [{ "a" => 1, b: 2 }, { a: 1, "b" => 2, 3 => 4 }, { true => 1, "true" => 2 }, { nil => 1, "" => 2 }, { "a" => 1, "a".b => 2 }].each do |h|
      assert_equal ERB.new(src).result_with_hash(n: h), t.render(n: h), h.inspect
    end
  end

  # Tpl::ERB#result_with_hash of a Hash with a Symbol and a String key of one name: the later
  # entry's value, as ERB sets one local variable per entry in order (it rendered the Symbol's);
  # Template#render keeps the Symbol's (README)
  def test_result_with_hash_symbol_and_string_key_later_wins
    e = Tpl::ERB.new("<%= n %>")
    [{ n: 1, "n" => 2 }, { "n" => 2, n: 1 }, { n: 3 }, { "n" => 4 }].each do |h|
      2.times { assert_equal ERB.new("<%= n %>").result_with_hash(h), e.result_with_hash(h), h.inspect }
    end
    assert_equal "1", Tpl::Template.new("<%= n %>", syntax: :erb).render({ "n" => 2, n: 1 })
  end

  # the state is converted on every render (session 15: one pass over each Hash): a Hash changed
  # between renders renders its new values, at the top and nested, small and big
  def test_state_mutated_between_renders
    t = Tpl::Template.new("<%= a %>|<%= h.inspect %>|<%= l.inspect %>", syntax: :erb)
    st = { "a" => "x", "h" => { "k" => "v" }, "l" => [1, 2] }
    assert_equal %(x|{"k"=>"v"}|[1, 2]), t.render(st)
    st["a"] << "y"
    st["h"]["k2"] = :s
    st["h"]["k"] = 2
    st["l"] << "z"
    assert_equal %(xy|{"k"=>2, "k2"=>:s}|[1, 2, "z"]), t.render(st)
    st.delete("a")
    st[:a] = 3
    assert_equal %(3|{"k"=>2, "k2"=>:s}|[1, 2, "z"]), t.render(st)
    big = (1..100).to_h { |i| ["x#{i}", i] } # more keys than the one-pass rule takes: looked up
    big["a"] = 1
    big["h"] = { k: 1 }
    big["l"] = []
    assert_equal "1|{:k=>1}|[]", t.render(big)
    big["a"] = 2
    big["h"][:k] = 5
    assert_equal "2|{:k=>5}|[]", t.render(big)
  end

  # Hash keys are converted once per render context and object (a cache that holds them): keys
  # made and dropped render after render (more than the cache holds, dynamic Symbols, GC and
  # compaction in between) and a compare_by_identity Hash's unfrozen keys changed in place
  # still print as Ruby prints them
  def test_state_keys_cache
    e = Tpl::Template.new("<%= h.inspect %>", syntax: :erb)
    20.times do |round|
      h = (0...40).to_h { |i| ["k#{round}_#{i}", i] }
      h[:"sym#{round}_#{rand(1000)}"] = round if round.odd?
      assert_equal h.inspect, e.render(h: h)
      GC.start
      GC.compact if round % 5 == 4 && GC.respond_to?(:compact)
    end
    ident = {}.compare_by_identity
    k = +"ab"
    ident[k] = 1
    assert_equal ident.inspect, e.render(h: ident)
    k << "c"
    assert_equal %({"abc"=>1}), e.render(h: ident)
    rows = Array.new(300) { |i| { "id" => i, "name" => "n#{i}" } }
    list = Tpl::Template.new("<% rows.each do |r| %><%= r['id'] %><%= r['name'] %>,<% end %>", syntax: :erb)
    assert_equal rows.map { |r| "#{r['id']}#{r['name']}," }.join, list.render(rows: rows)
  end

  # long Strings are borrowed, not copied, by a render that runs no Ruby code: changed in place
  # between renders, converted from another encoding, or beside a host object (whose callbacks
  # run Ruby code: then copied), they render what they hold
  def test_state_long_strings
    t = Tpl::Template.new("<%= s.size %>:<%= s[-3..] %>|<%= l.map { |x| x.size }.inspect %>|<%= p.name if p %>", syntax: :erb)
    s = "é" * 100
    l = ["x" * 50, "ü" * 40]
    assert_equal "100:ééé|[50, 40]|", t.render(s: s, l: l, p: nil)
    s << "abc"
    l[0] = "y" * 60
    l[1].replace("z" * 30)
    assert_equal "103:abc|[60, 30]|", t.render(s: s, l: l, p: nil)
    assert_equal "103:abc|[60, 30]|Ann", t.render(s: s, l: l, p: Person.new("Ann", 1))
    ren = Person.new("Bo", 2)
    def ren.name = (GC.start; GC.compact if GC.respond_to?(:compact); "Bo")
    assert_equal "103:abc|[60, 30]|Bo", t.render(s: s, l: l, p: ren)
    latin = ("\xE9".force_encoding("ISO-8859-1") * 64)
    assert_equal "64:ééé|[60, 30]|", t.render(s: latin, l: l, p: nil)
    big = Array.new(600) { |i| "row #{i} " * 5 }
    t2 = Tpl::Template.new("<%= rows.map { |r| r.size }.sum %>", syntax: :erb)
    want = big.sum(&:size).to_s
    3.times { assert_equal want, t2.render(rows: big) }
  end

  # short (embedded) Strings are borrowed too, unless a GC runs while the state is converted (it
  # may compact the heap and move them): under GC.stress with compaction, converting a String
  # from another encoding allocates, so every render makes its state again, copying them; and a
  # Bignum converted between them (rb_big2str) alike
  def test_state_short_strings_gc_during_conversion
    t = Tpl::Template.new("<%= a %>|<%= b %>|<%= c %>|<%= l.join(',') %>|<%= n %>", syntax: :erb)
    latin = "caf\xE9".dup.force_encoding("ISO-8859-1")
    want = "ab|café|xyz|p,q,r|#{2**70}"
    got = under_gc_stress(3) { t.render(a: +"ab", b: latin, c: +"xyz", l: [+"p", +"q", +"r"], n: 2**70) }
    got.each_with_index { |g, i| assert_equal want, g, "round #{i}" }
    assert_equal want, t.render(a: "ab", b: latin, c: "xyz", l: %w[p q r], n: 2**70)
  end

  # a name under both a Symbol and a String key: the Symbol's value, whatever the order; keys of
  # mixed kinds and encodings in nested Hashes print as Ruby prints them
  def test_state_keys_kinds_and_encodings
    t = Tpl::Template.new("<%= a %>", syntax: :erb)
    assert_equal "2", t.render({ "a" => 1, a: 2 })
    assert_equal "2", t.render({ a: 2, "a" => 1 })
    assert_equal "3", t.render({ "a".encode("ISO-8859-1") => 3 })
    assert_raises(Tpl::NameError) { t.render({ "b" => 1 }) }
    e = Tpl::Template.new("<%= h.inspect %>", syntax: :erb)
    [{ "a" => 1, b: 2, 3 => 4, nil => 5 }, { b: 2, "a" => 1 }, { 1.5 => "x", "é" => "ü" }, {},
     { "x" => { y: { "z" => [[], {}] } } }].each do |h|
      assert_equal h.inspect, e.render(h: h)
    end
    assert_raises(EncodingError) { e.render(h: { "\xff".b => 1 }) }
    assert_raises(EncodingError) { e.render(h: { "a" => 1, "\xfe".b => 1 }) }
  end

  # a state key's match to a read name is kept with the key in the context's key cache (state_i:
  # found once per key object, not probed on every render): the same frozen key objects met in
  # other roles first (a nested Hash's key, a key the template does not read), then as state
  # keys, under a Symbol beside the String, and missing again, render for render as fresh keys do
  def test_state_keys_matched_once_per_key_object
    t = Tpl::Template.new("<%= name %>|<%= h.keys.inspect %>|<%= defined?(extra) ? extra : '-' %>", syntax: :erb)
    name, h, extra, other = %w[name h extra other].map { |s| -s }
    fresh = ->(st) { st.to_h { |k, v| [k.is_a?(String) ? +k : k, v] } }
    states = [
      { h => { name => 1, other => 2 }, "name" => "a" },
      { name => "b", h => { extra => 3 } },
      { name => "c", h => {}, other => 4, extra => "x" },
      { name => "d", name.to_sym => "e", h => { h => 5 } },
      { h => { name => 6 }, name => "f", extra => nil },
      { name => "g", h => {}, other => 7 },
    ]
    3.times do |round|
      states.each_with_index do |st, i|
        want = t.render(fresh.call(st))
        assert_equal want, t.render(st), "round #{round}, state #{i}"
        assert_equal want, t.render(st), "round #{round}, state #{i} again"
      end
      assert_raises(Tpl::NameError) { t.render({ h => {}, other => 1 }) }
      GC.start
    end
    assert_equal "b|[\"extra\"]|-", t.render(states[1])
    assert_equal "e|[\"h\"]|-", t.render(states[3])
    assert_equal "c|[]|x", t.render(states[2])
  end

  # Template#render hands the VM the values of the template's reads (tpl_render_set_state_reads,
  # the VM then looks none of them up): states of other names, key kinds and orders, render after
  # render on one Template, interleaved with another Template, print as Ruby's ERB prints them
  def test_state_reads_as_erb
    src = "<%= a %>|<%= defined?(b) ? b : '-' %>|<%= defined?(c) ? c.inspect : '-' %>|" \
          "<% if defined?(xs) %><% xs.each do |x| %><%= x %>,<% end %><% end %>|<%= defined?(d) ? d['x'] : '-' %>|<%= a %>"
    src2 = "<%= defined?(d) ? d['x'] : '-' %>/<%= a %>/<%= defined?(zz) ? zz : '-' %>"
    t, t2 = Tpl::Template.new(src, syntax: :erb), Tpl::Template.new(src2, syntax: :erb)
    states = [
      { a: "1" }, { "a" => "2", "b" => "B" }, { b: "3", a: "4", c: nil }, { "xs" => [1, 2], "a" => "é", "d" => { "x" => "X" } },
      { a: "5", zz: 1, "c" => [1] }, { a: 1, b: 2, c: 3, xs: [], d: { "x" => 4 } }, { "d" => { "x" => "y" }, "a" => "" },
    ]
    3.times do |round|
      states.each_with_index do |st, i|
        [[t, src], [t2, src2]].each do |tt, s|
          want = ERB.new(s, trim_mode: "-").result_with_hash(st)
          assert_equal want, tt.render(st), "round #{round}, state #{i}: #{s}"
          assert_equal want, tt.render(**st.transform_keys(&:to_sym)), "round #{round}, state #{i} as keywords"
        end
      end
      GC.start
    end
    assert_equal "S|-|-||-|S", t.render({ a: "S", "a" => "T" }) # (both keys: the Symbol's, as before)
    assert_equal "T|-|-||-|T", Tpl::ERB.new(src, trim_mode: "-").result_with_hash({ a: "S", "a" => "T" })
  end

  # a state Hash's own String values are borrowed inline (render_body, as a nested Hash's are);
  # the kinds that path leaves to str_val — frozen (ERB: frozen? true, FrozenError), other
  # encodings, a subclass — print and behave as Ruby's ERB has them, short and long alike
  class MyStr < String; end
  def test_state_string_values_as_erb
    long = "é" * 40
    state = { a: +"ab", b: "fz".freeze, c: long.dup, d: long.dup.freeze, e: "caf\xE9".dup.force_encoding("ISO-8859-1"),
              f: MyStr.new("sub"), g: "bin".b, h: +"" }
    # (Template#render takes another encoding's String as UTF-8: e and g only by size)
    # (String#encoding of a borrowed String is refused below: a UTF-8 and a US-ASCII String borrow alike)
    src = "<% [a, b, c, d, f, h].each do |s| %><%= s.frozen? %>:<%= s.size %>:<%= s.bytesize %>|<% end %>" \
          "<%= e.size %>:<%= g.size %>:<%= e.frozen? %>|<%= [a, b, c, d, f, g, h].join(',') %>|<%= b.dup << '?' %>"
    want = ERB.new(src).result_with_hash(state)
    t = Tpl::Template.new(src, syntax: :erb)
    3.times { assert_equal want, t.render(state) }
    enc = Tpl::Template.new("<%= a.encoding %>", syntax: :erb)
    assert_raises(Tpl::Error) { enc.render(state) }
    assert_raises(Tpl::Error) { enc.render(a: "x".encode("US-ASCII")) }
    %w[<%\ b\ <<\ 'x'\ %> <%\ d.upcase!\ %>].each do |bad|
      e = Tpl::Template.new(bad, syntax: :erb)
      assert_raises(FrozenError, bad) { ERB.new(bad).result_with_hash(state) }
      assert_raises(Tpl::FrozenError, bad) { e.render(state) }
    end
  end

  def test_host_objects_jinja
    t = Tpl::Template.new("{{ p.name }} {{ p.age + 1 }} {{ p.greet('Hi', punct='?') }} {{ p }} {{ p.missing is defined }}")
    assert_equal "Ann 41 Hi, Ann? Person(Ann) False", t.render(p: Person.new("Ann", 40))
  end

  # host objects of a render are pinned while it runs (tpl_ext.c keep): Ruby code a callback runs
  # may compact the heap, and the render's C memory holds each host object's address. Each item
  # compacts the heap (moving what is not pinned) inside its first method and is sent a second
  # one after; it stays where it was (an Array keeping them let them move: a segfault, or a
  # method sent to another object)
  class Mover
    attr_reader :moved

    def initialize(i) = (@i = i; @moved = false)

    def a
      require "objspace"
      at = ObjectSpace.dump(self)[/"address":"(0x\h+)"/, 1]
      GC.verify_compaction_references(double_heap: true, toward: :empty)
      @moved = at != ObjectSpace.dump(self)[/"address":"(0x\h+)"/, 1]
      "a#{@i}"
    end

    def b = "b#{@i}"
  end

  def test_host_objects_pinned_while_callbacks_compact
    skip "no GC compaction" unless GC.respond_to?(:verify_compaction_references)
    t = Tpl::Template.new("<% items.each do |m| %><%= m.a %><%= m.b %>,<% end %>", syntax: :erb)
    3.times do
      items = Array.new(4) { |i| Mover.new(i) }
      assert_equal "a0b0,a1b1,a2b2,a3b3,", t.render(items: items)
      assert_equal [false] * 4, items.map(&:moved)
    end
  end

  def test_host_objects_erb
    t = Tpl::Template.new("<%= p.name %> <%= p.greet %> <%= p.greet('Yo', punct: '.') %> <%= p[:name] %> <%= p %>",
                          syntax: :erb)
    assert_equal "Ann Hello, Ann! Yo, Ann. Ann Person(Ann)", t.render(p: Person.new("Ann", 40))
  end

  def test_enumerable_host_object_erb
    list = Class.new do
      include Enumerable
      def each(&) = [3, 1, 2].each(&)
    end.new
    t = Tpl::Template.new("<% xs.each do |x| %><%= x %><% end %> <%= xs.sort.inspect %> <%= xs.map { |x| x * 2 }.sum %>",
                          syntax: :erb)
    assert_equal "312 [1, 2, 3] 12", t.render(xs: list)
  end

  def test_endless_enumerable_stops_at_the_memory_limit
    # An endless each is drained only while its items' cost (slot, value, object) stays within
    # max_memory: a Tpl::LimitError, not a hang that fills the process.
    endless = Class.new do
      include Enumerable
      def each = loop { yield 1 }
    end.new
    ["{{ x|first }}", "{% for y in x %}{{ y }}{% endfor %}", "<% x.each do |y| %><%= y %><% end %>"].each do |src|
      t = Tpl::Template.new(src, syntax: src.start_with?("<%") ? :erb : :jinja)
      e = assert_raises(Tpl::LimitError) { t.render({ x: endless }, limits: { max_memory: 1 << 20 }) }
      assert_match(/memory limit \(1048576 bytes\) at item/, e.message)
    end
    pairs = Class.new do
      include Enumerable
      def each = (yield 1, 2; yield 3)
    end.new
    assert_equal "[1, 2];3;", Tpl::Template.new("{% for y in x %}{{ y }};{% endfor %}").render(x: pairs)
    # an ERB method call on the object is Ruby's own (Enumerable#first stops after one item)
    assert_equal "1", Tpl::Template.new("<%= x.first %>", syntax: :erb).render(x: endless)
  end

  def test_endless_enumerable_memory_bounded
    # an endless each of Strings under a 64 MiB limit stops before the process grows by it (counting
    # 16 bytes an item it grew by 4M Strings: about 270 MB; 1 GB at the default limit, session 26)
    code = <<~RUBY
      require "tpl"
      e = Class.new { include Enumerable; def each = (i = 0; loop { yield "s\#{i += 1}" }) }.new
      GC.start
      base = File.read("/proc/self/status")[/VmHWM:\s+(\d+)/, 1].to_i
      begin
        Tpl::Template.new("{% for y in x %}{% endfor %}").render({ x: e }, limits: { max_memory: 64 << 20, fuel: 1 << 40 })
      rescue Tpl::LimitError => err
        puts err.message
      end
      puts((File.read("/proc/self/status")[/VmHWM:\s+(\d+)/, 1].to_i - base) >> 10)
    RUBY
    out = IO.popen([RbConfig.ruby, "-e", code], &:read).lines
    assert_match(/memory limit \(67108864 bytes\) at item/, out[0])
    assert_operator out[1].to_i, :<, 64, out.join
  end

  def test_limits_out_of_range_refused
    # a negative or too large limit is an ArgumentError naming it (it wrapped to a huge unsigned one)
    t = Tpl::Template.new("{{ 1 }}")
    [{ fuel: -1 }, [-1, 0, 0, 0], { max_depth: 2**32 }, { max_memory: 2**64 }, { max_output: "9" }].each do |l|
      e = assert_raises(::ArgumentError) { t.render({}, limits: l) }
      assert_match(/Tpl::Limits: (fuel|max_depth|max_memory|max_output) must be/, e.message)
    end
    assert_equal "1", t.render({}, limits: { fuel: 1000, max_depth: 2**32 - 1 })
  end

  def test_large_integers_cross_exactly
    t = Tpl::Template.new("{{ n }} {{ n + 1 }} {{ m }}")
    assert_equal "1180591620717411303424 1180591620717411303425 -9223372036854775809", t.render(n: 2**70, m: -2**63 - 1)
    seen = []
    f = ->(x) { seen << x; "" }
    e = Tpl::ERB.new("<%= f.call(n * n) %><%= f.call(-k) %>", trim_mode: "-")
    assert_equal "", e.result_with_hash(n: 2**70, k: 3**20000, f: f)
    assert_equal [2**140, -3**20000], seen
  end

  def test_integer_past_limit_refused
    t = Tpl::Template.new("{{ n }}")
    assert_raises(NoMemoryError) { t.render(n: 2**(2**21)) } # past the 2**20-bit integer limit
  end

  def test_invalid_utf8_refused
    t = Tpl::Template.new("{{ s }}")
    assert_raises(EncodingError) { t.render(s: "\xff".b) }
  end

  def test_cycle_refused
    a = []
    a << a
    assert_raises(ArgumentError) { Tpl::Template.new("{{ a }}").render(a: a) }
  end

  def test_syntax_error_location
    e = assert_raises(Tpl::SyntaxError) { Tpl::Template.new("line1\n{{ a + }}", name: "v.jinja") }
    assert_kind_of Tpl::Error, e
    assert_equal "v.jinja", e.file
    assert_equal 2, e.line
    assert_equal 1, e.status
    assert e.column.is_a?(Integer)
    assert_match(/\Av\.jinja:2:\d+: error: /, e.message)
  end

  def test_name_error_erb
    t = Tpl::Template.new("a\n<%= nope %>", syntax: :erb, name: "v.erb")
    e = assert_raises(Tpl::NameError) { t.render({}) }
    assert_equal 2, e.line
    assert_equal 5, e.column
    assert_match(/undefined local variable or method `nope'/, e.message)
  end

  def test_strict_undefined_jinja
    t = Tpl::Template.new("{{ x }}", strict: true)
    assert_raises(Tpl::NameError) { t.render({}) }
  end

  def test_limit_error
    t = Tpl::Template.new("{% for i in range(100000) %}{{ i }}{% endfor %}")
    e = assert_raises(Tpl::LimitError) { t.render({}, limits: { fuel: 1000 }) }
    assert_equal 4, e.status
  end

  def test_error_kind_classes
    # issue 16: Ruby's class for the error's kind, under the class of its status
    t = Tpl::Template.new("<%= nil.upcase %>", syntax: :erb)
    e = assert_raises(Tpl::NoMethodError) { t.render({}) }
    assert_kind_of Tpl::TypeError, e
    assert_equal "NoMethodError", e.exception_name
    e = assert_raises(Tpl::KeyError) { Tpl::Template.new("<%= {a: 1}.fetch(:b) %>", syntax: :erb).render({}) }
    assert_kind_of Tpl::ValueError, e
    assert_raises(Tpl::ZeroDivisionError) { Tpl::Template.new("<%= 1 / 0 %>", syntax: :erb).render({}) }
    assert_raises(Tpl::ArgumentError) { Tpl::Template.new("<%= 'a'.center %>", syntax: :erb).render({}) }
    assert_raises(Tpl::SyntaxError) { Tpl::Template.new("{{ 1|nosuch }}") }
  end

  def test_callback_exception_reraised_with_location
    boom = Class.new { def name = raise(KeyError, "no name here") }.new
    t = Tpl::Template.new("ok\n  {{ p.name }}", name: "t.jinja")
    e = assert_raises(KeyError) { t.render(p: boom) }
    assert_match(/no name here \(tpl: raised while rendering t\.jinja, line 2, column \d+\)/, e.message)
    assert e.backtrace.any? { |l| l.include?("test_template.rb") }
    # the template renders again afterwards
    assert_equal "ok\n  Ann", t.render(p: Person.new("Ann", 1))
  end

  def test_callback_exception_erb
    boom = Class.new { def name = raise(ArgumentError, "bad") }.new
    t = Tpl::Template.new("<%= p.name %>", syntax: :erb, name: "t.erb")
    e = assert_raises(ArgumentError) { t.render(p: boom) }
    assert_match(/bad \(tpl: raised while rendering t\.erb, line 1, column \d+\)/, e.message)
  end

  def test_save_load_reads
    t = Tpl::Template.new("{{ a }}-{{ b.c }}", name: "x.jinja")
    assert_equal %w[a b], t.reads
    bytes = t.save
    assert_equal Encoding::ASCII_8BIT, bytes.encoding
    t2 = Tpl::Template.load(bytes)
    assert_equal "1-2", t2.render(a: 1, b: { c: 2 })
    assert_equal %w[a b], t2.reads
    assert_raises(Tpl::CorruptError) { Tpl::Template.load(bytes[0, bytes.size - 3] + "xyz") }
  end

  # A wrong argument type is a ::TypeError ("no implicit conversion of nil into String", as
  # File.read and String#+ raise), never a NoMethodError, a NameError or a Tpl::CorruptError.
  def test_wrong_argument_types_are_type_errors
    bytes = Tpl::Template.new("{{ x }}").save
    [nil, 42, -1, :sym, [1], 1.5].each do |bad|
      assert_raises(::TypeError, bad.inspect) { Tpl::Template.load(bad) }
    end
    assert_equal "1", Tpl::Template.load(bytes).render(x: 1)
    [nil, 42, :sym, ["x"]].each do |bad|
      assert_raises(::TypeError, bad.inspect) { Tpl::Template.new(bad) }
      assert_raises(::TypeError, bad.inspect) { Tpl::ERB.new(bad, trim_mode: "-") }
    end
    assert_raises(::TypeError) { Tpl::Template.new("x", syntax: nil) }
    assert_raises(::TypeError) { Tpl::Template.new("x", syntax: 1) }
    assert_raises(::ArgumentError) { Tpl::Template.new("x", syntax: :mustache) }
    assert_equal "1", Tpl::Template.new("<%= 1 %>", syntax: "erb").render({})
    assert_raises(::TypeError) { Tpl::Template.new("x", loader: 3) }
    [nil, 42].each do |bad|
      assert_raises(::TypeError, bad.inspect) { Tpl::Template.from_file(bad) }
      assert_raises(::TypeError, bad.inspect) { Tpl::Page.load(bad) }
      assert_raises(::TypeError, bad.inspect) { Tpl::ERB.new("x", trim_mode: "-").result(bad) }
    end
    assert_raises(::TypeError) { Tpl::Store.new(42) }
    t = Tpl::Template.new("{{ x }}")
    [42, "s", [1]].each { |bad| assert_raises(::TypeError, bad.inspect) { t.render(bad) } }
    assert_raises(::TypeError) { t.render({}, limits: -1) }
    assert_raises(::ArgumentError) { t.render({}, limits: { fuel: -1 }) }
    assert_raises(::ArgumentError) { t.render({}, limits: { fuel: 1.5 }) }
    assert_raises(::TypeError) { t.render({}, catalogs: 3) }
    assert_raises(::TypeError) { t.render({}, catalogs: [[1]]) }
    assert_raises(::TypeError) { t.render({}, lang: 3) }
    # one catalog given as a Hash (not an Array of them): its pairs are not catalogs
    assert_equal "HI", Tpl::Template.new('{{ tr("hi") }}').render({}, lang: "zz", catalogs: { "zz" => { "hi" => "HI" } })
  end

  def test_from_file
    Dir.mktmpdir do |d|
      File.write(File.join(d, "v.erb"), "<%= x %>!")
      File.write(File.join(d, "v.txt"), "{x}?")
      assert_equal "1!", Tpl::Template.from_file(File.join(d, "v.erb")).render(x: 1)
      assert_equal "1?", Tpl::Template.from_file(File.join(d, "v.txt")).render(x: 1)
      assert_equal :erb, Tpl::Template.from_file(File.join(d, "v.erb")).syntax
    end
  end

  def test_fmt
    assert_equal "a=1 b=x P", Tpl::Template.new("a={a} b={b[k]} {p.name}", syntax: :fmt).render(a: 1, b: { k: "x" }, p: Person.new("P", 1))
  end

  def test_profile_and_options
    t = Tpl::Template.new("  {% if a %}\n  x  \n{% endif %}\n\n\n\ny", profile: "pinecall")
    assert_equal "x\n\ny", t.render(a: true)
    assert_raises(ArgumentError) { Tpl::Template.new("x", syntax: :erb, profile: "hf") }
    assert_raises(ArgumentError) { Tpl::Template.new("x", bogus: true) }
  end

  def test_render_options
    t = Tpl::Template.new("{{ remembers('dog') }} {{ call.channel }} {{ call.medium }} {{ tr('Hello') }}")
    cat = { "main_lang" => "en", "es" => { "Hello" => "Hola" } }
    out = t.render({}, facts: ["has a dog"], call: { channel: :whatsapp }, lang: "es", catalogs: [cat])
    assert_equal "True whatsapp text Hola", out
    assert_equal "False phone voice Hello", t.render({})
    assert_equal "True phone voice Hello", t.render({}) { |w| w == "dog" }
  end

  # facts set from the same Array again are not set again (compared in place): an Array changed
  # in between, another one, none, or facts that are not Strings all render what they say
  def test_facts_changed_between_renders
    t = Tpl::Template.new("{{ remembers('dog') }}{{ remembers('cat') }}")
    facts = ["has a dog"]
    assert_equal "TrueFalse", t.render({}, facts: facts)
    assert_equal "TrueFalse", t.render({}, facts: facts)
    facts << "has a cat"
    assert_equal "TrueTrue", t.render({}, facts: facts)
    facts[0] = +"has a bird"
    assert_equal "FalseTrue", t.render({}, facts: facts)
    facts[1].replace("has a fish")
    assert_equal "FalseFalse", t.render({}, facts: facts)
    assert_equal "TrueFalse", t.render({}, facts: [:"has a dog"])
    assert_equal "TrueFalse", t.render({}, facts: "has a dog")
    assert_equal "FalseFalse", t.render({}, facts: [])
    assert_equal "FalseTrue", t.render({}, facts: ["has a cat".encode("UTF-16LE")])
    assert_equal "FalseFalse", t.render({})
  end

  # render_facts(state, facts): render(state, facts: facts) without the keyword Hash
  def test_render_facts_as_render
    t = Tpl::Template.new("{{ a }}{{ remembers('dog') }}{{ remembers('cat') }}")
    e = Tpl::Template.new("<%= a %><%= remembers('dog') %><%= @b %>", syntax: :erb)
    facts = ["has a dog"]
    [[{ a: 1 }, facts], [{ "a" => "x", b: 2 }, nil], [{ a: "é", "b" => [1] }, []], [{ a: 2 }, "has a cat"],
     [{ a: 3 }, [:"has a dog", "has a cat"]], [{ a: 4 }, facts]].each do |st, f|
      [t, e].each do |tt|
        want = f.nil? ? tt.render(st) : tt.render(st, facts: f)
        assert_equal want, tt.render_facts(st, f), "#{st} #{f.inspect}"
        assert_equal tt.render(st), tt.render_facts(st), "#{st}"
      end
    end
    assert_equal "1TrueFalse", t.render_facts({ a: 1 }, nil) { |w| w == "dog" }
    assert_raises(::ArgumentError) { t.render_facts }
    assert_raises(::ArgumentError) { t.render_facts({}, [], 1) }
    # other facts and states: the same result, or the same error
    outcome = ->(&blk) { [:ok, blk.call] rescue [$!.class, $!.message] }
    [1, { x: 1 }, [1], [nil]].each do |odd|
      assert_equal outcome.call { t.render({ a: 1 }, facts: odd) }, outcome.call { t.render_facts({ a: 1 }, odd) }, odd.inspect
    end
    assert_equal [Tpl::NameError], outcome.call { e.render_facts({}, []) }.take(1)
    [5, "x", [1]].each do |st|
      assert_equal outcome.call { t.render(st) }, outcome.call { t.render_facts(st, []) }, st.inspect
    end
  end

  def test_loader
    files = { "inc.jinja" => "[{{ x }}]" }
    t = Tpl::Template.new("a{% include 'inc.jinja' %}b", loader: ->(n) { files[n] })
    assert_equal "a[1]b", t.render(x: 1)
  end

  def test_threads
    t = Tpl::Template.new("{% for i in range(n) %}{{ i }},{% endfor %}{{ p.name }}")
    threads = 8.times.map do |k|
      Thread.new do
        200.times.map { |j| t.render(n: (k + j) % 7, p: Person.new("T#{k}", 1)) }
      end
    end
    threads.each_with_index do |th, k|
      th.value.each_with_index do |out, j|
        n = (k + j) % 7
        assert_equal "#{(0...n).map { |i| "#{i}," }.join}T#{k}", out
      end
    end
  end

  def test_threads_plain_data_release_gvl
    t = Tpl::Template.new("{% for r in rows %}{{ r.name|upper }} {{ r.tags|join(',') }}\n{% endfor %}")
    rows = 500.times.map { |i| { "name" => "n#{i}", "tags" => %w[a b] } }
    want = t.render(rows: rows)
    4.times.map { Thread.new { 50.times.all? { t.render(rows: rows) == want } } }.each { |th| assert th.value }
  end

  # Big results between two GCs: the render asks for a minor GC (the freed result buffers are
  # reused instead of faulting fresh heap in: tpl_ext.c gc_nudge), never while GC.disable'd
  def test_big_results_nudge_the_gc_unless_disabled
    t = Tpl::Template.new("<%= s * 1000 %>", syntax: :erb)
    s = "0123456789" * 10
    c = GC.count
    200.times { assert_equal 100_000, t.render(s: s).bytesize }
    assert_operator GC.count - c, :>=, 2
    begin
      GC.disable
      c = GC.count
      200.times { t.render(s: s) }
      assert_equal c, GC.count
      assert GC.disable, "GC stays disabled"
    ensure
      GC.enable
    end
  end

  def rss_kb = File.read("/proc/self/status")[/VmRSS:\s+(\d+)/, 1].to_i

  # (issue 20 #1) a Template's malloc'd memory (its program and render contexts) is its
  # ObjectSpace.memsize_of; 40,000 Template.new and .load with a render each leave no live objects
  # behind. (RSS: test_gc.rb's test_rss_flat_for_templates_made_in_a_loop.)
  def test_templates_made_in_a_loop
    require "objspace"
    src = "<% items.each do |i| %><%= i * 2 %>,<% end %> <%= name %>"
    blob = Tpl::Template.new(src, syntax: :erb).save
    t = Tpl::Template.new(src, syntax: :erb)
    bare = ObjectSpace.memsize_of(t)
    assert_operator bare, :>, src.bytesize
    t.render(items: [1], name: "x")
    assert_operator ObjectSpace.memsize_of(t), :>, bare + 4096, "a render context counts"
    make = ->(k) { (k.even? ? Tpl::Template.new(src, syntax: :erb) : Tpl::Template.load(blob)).render(items: [1, 2, 3], name: "x") }
    10_000.times(&make)
    GC.start
    objs = GC.stat(:heap_live_slots)
    assert_equal 40_000, 40_000.times.count { |k| make.(k) == "2,4,6, x" }
    GC.start
    assert GC.stat(:heap_live_slots) < objs * 1.2 + 10_000, "live objects #{objs} -> #{GC.stat(:heap_live_slots)}"
  end
end
