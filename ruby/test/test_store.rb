# Tpl::Store and Tpl::Prompt: the prompt store from Ruby (issue 20; include/tpl_store.h), on SQLite,
# against what `tplc prompt` does with the same store.
require "minitest/autorun"
require "tpl"
require "json"
require "tmpdir"
require "open3"
require_relative "helper"

class TestStore < Minitest::Test
  include TplTestHelper
  TPLC = ENV["TPLC"]

  def setup
    @dir = Dir.mktmpdir("tpl-rb-store-")
    @path = File.join(@dir, "s", "store.db")
    @store = Tpl::Store.new(@path)
  end

  def teardown
    @store.close
    FileUtils.rm_rf(@dir)
  end

  def test_seed_session
    row = @store.create("demo.hello", "Hello, {name}", tr_keys: ["name"])
    assert_equal 1, row[:version]
    assert_equal "demo.hello", row[:name]
    assert_equal :fmt, row[:syntax]
    assert_equal ["name"], row[:tr_keys]
    @store.tr_set("demo.hello", "Hello, {name}", "zz", "HEY, {name}")
    assert_equal "HEY, Ada", @store.render("demo.hello", { name: "Ada" }, lang: "zz")
    assert_equal "Hello, Ada", @store.render("demo.hello", { name: "Ada" })
    @store.create("demo.tk", "Hello, {name}! Welcome to {place}", tr_keys: [:place])
    @store.tr_set("demo.tk", "Hello, {name}! Welcome to {place}", "zz", "HEY, {name}! GO {place}")
    @store.tr_set("demo.tk", "Tokyo", "zz", "TOKIO")
    assert_equal "HEY, Ada! GO TOKIO", @store.render("demo.tk", { name: "Ada", place: "Tokyo" }, lang: "zz")
  end

  # create's tr keys, tr_set's plural forms and tr_list's dictionaries are Strings only an Array
  # holds (movable by compaction): their bytes are read after the last allocation of the call
  # (tpl_ext.c strs_check/strs_ptrs), also with a GC and compaction at every allocation
  def test_string_arrays_under_gc_compaction
    rows = under_gc_stress(1) do |i|
      row = @store.create("gc.k#{i}", "Hi {name} at {place}", tr_keys: [:name, "pl" + "ace", :"x#{i}"])
      @store.tr_set("gc.k#{i}", "Hi {name} at {place}", "zz", "YO {name} {place}")
      [row[:tr_keys], @store.tr_list(dicts: ["gc.k#{i}", "n" + "one"]).map { |h| h[:target] }]
    end
    rows.each_with_index { |r, i| assert_equal [["name", "place", "x#{i}"], ["YO {name} {place}"]], r }
  end

  def test_versions_refs_remove
    3.times { |i| @store.create("p.a", "v#{i + 1} {x}") }
    assert_equal "v3 1", @store.render("p.a", { x: 1 })
    assert_equal "v2 1", @store.render("p.a:2", { x: 1 })
    id = @store.get("p.a:1")[:id]
    assert_equal "v1 1", @store.render(id.to_s, { x: 1 })
    @store.remove("p.a")
    assert_equal 2, @store.get("p.a")[:version]
    assert_equal [1, 2], @store.versions("p.a").map { |r| r[:version] }
    assert_equal [1, 2, 3], @store.versions("p.a", all: true).map { |r| r[:version] }
    assert_equal [true], @store.versions("p.a", all: true).select { |r| r[:version] == 3 }.map { |r| r[:removed] }
    @store.create("q.b", "b")
    assert_equal %w[p.a q.b], @store.list.map { |r| r[:name] }
    assert_equal %w[q.b], @store.list("q.").map { |r| r[:name] }
    e = assert_raises(Tpl::Store::NotFound) { @store.get("p.a:9") }
    assert_match(/no version 9/, e.message)
    assert_raises(Tpl::Store::NotFound) { @store.render("nothing.here") }
    assert_raises(ArgumentError) { @store.get("bad name") }
    assert_kind_of Tpl::Error, e
  end

  def test_compile_error_located
    e = assert_raises(Tpl::SyntaxError) { @store.create("bad.j", "{% if %}", syntax: :jinja) }
    assert_equal 1, e.line
    assert_raises(Tpl::Store::NotFound) { @store.get("bad.j") }
  end

  def test_jinja_erb_dictionaries_and_lookup_order
    @store.create("v.j", "{{ tr('Hi') }} {{ tr('Bye') }} {{ who }}", syntax: :jinja)
    @store.create("v.e", "<%= tr('Hi') %> <%= who %>", syntax: :erb)
    @store.tr_set("v.j", "Hi", "fr", "Salut")
    @store.tr_set("v.j", "Bye", "fr", "Ciao", dict: "common")
    @store.tr_set("v.j", "Hi", "fr", "Bonjour", dict: "common")
    @store.bind("v.j", "common")
    @store.bind("v.e", "common")
    assert_equal "Salut Ciao Ada", @store.render("v.j", { who: "Ada" }, lang: "fr")
    assert_equal "Bonjour Bo", @store.render("v.e", { who: "Bo" }, lang: "fr")
    assert_equal ["common"], @store.get("v.j")[:dicts]
    rows = @store.tr_list("v.j", lang: "fr")
    assert_equal [%w[v.j Hi Salut], %w[common Bye Ciao], %w[common Hi Bonjour]], rows.map { |r| r.values_at(:dict, :source, :target) }
    @store.unbind("v.e", "common")
    assert_equal "Hi Bo", @store.render("v.e", { who: "Bo" }, lang: "fr")
    @store.tr_delete("v.j", "fr", "Hi")
    assert_equal "Bonjour Ciao Ada", @store.render("v.j", { who: "Ada" }, lang: "fr")
    assert_raises(Tpl::Store::NotFound) { @store.tr_set("no.prompt", "Hi", "fr", "x") }
  end

  def test_prompt_object_and_language_resolution
    @store.create("l.x", "{{ tr('Hi') }}", syntax: :jinja, lang: "de")
    @store.tr_set("l.x", "Hi", "de", "Hallo")
    @store.tr_set("l.x", "Hi", "fr", "Salut")
    pr = @store.load("l.x")
    assert pr.frozen?
    assert Ractor.shareable?(pr)
    assert_equal "Hallo", pr.render
    assert_equal "Salut", pr.render(lang: "fr")
    assert_equal 1, pr.row[:version]
    assert_equal "Hallo", pr.render(limits: { fuel: 100_000 })
    assert_raises(Tpl::LimitError) { @store.load("l.x").template.render(limits: { fuel: 1 }) }
  end

  def test_plural_rows_and_po_round_trip
    @store.create("g.n", "{{ ngettext('%(num)d file', '%(num)d files', n) }}", syntax: :jinja)
    @store.tr_set("g.n", "%(num)d file", "fr", "%(num)d fichier", plural: "%(num)d files",
                                                                   forms: ["%(num)d fichier", "%(num)d fichiers"])
    assert_equal "2 fichiers", @store.render("g.n", { n: 2 }, lang: "fr")
    po = File.join(@dir, "fr.po")
    assert_equal 1, @store.po_export(po, name: "g.n", lang: "fr")
    assert_match(/msgid_plural "%\(num\)d files"/, File.read(po))
    Tpl::Store.open(File.join(@dir, "other.db")) do |s2|
      s2.create("g.n", "{{ ngettext('%(num)d file', '%(num)d files', n) }}", syntax: :jinja)
      assert_equal 1, s2.po_import(po)
      assert_equal "1 fichier", s2.render("g.n", { n: 1 }, lang: "fr")
    end
    # a plural row, as a plain one, needs the prompt (a removed one counts); nothing is written
    # for a name with none
    %w[nope.x g.none].each do |name|
      e = assert_raises(Tpl::Store::NotFound) do
        @store.tr_set(name, "p", "fr", "x", plural: "q", forms: %w[x y], dict: name == "g.none" ? "g.n" : nil)
      end
      assert_equal "no prompt named '#{name}'", e.message
    end
    assert_equal [], @store.tr_list(dicts: ["nope.x"])
    assert_equal ["%(num)d file"], @store.tr_list("g.n").map { |r| r[:source] }
    @store.create("g.gone", "x")
    @store.remove("g.gone")
    @store.tr_set("g.gone", "p", "fr", "x", plural: "q", forms: %w[x y])
    assert_equal ["p"], @store.tr_list(dicts: ["g.gone"]).map { |r| r[:source] }
    bad = File.join(@dir, "bad.po")
    File.write(bad, "msgid \"a\"\nmsgstr \"b\n")
    assert_raises(Tpl::SyntaxError) { @store.po_import(bad, dict: "x") }
  end

  def test_one_round_trip_per_operation
    @store.create("r.t", "{{ tr('Hi') }}", syntax: :jinja)
    @store.tr_set("r.t", "Hi", "fr", "Salut")
    n = @store.round_trips
    @store.load("r.t")
    @store.get("r.t")
    @store.list
    @store.tr_set("r.t", "Hi", "fr", "Salut!")
    assert_equal n + 4, @store.round_trips
    assert_equal :sqlite, @store.backend
  end

  def test_same_store_as_tplc
    skip "TPLC not set" unless TPLC
    @store.create("c.x", "Hi {name}")
    out, st = Open3.capture2(TPLC, "prompt", "render", "c.x", "--args", '{"name":"Ada"}', "--store", @path)
    assert st.success?
    assert_equal "Hi Ada", out
    Open3.capture2(TPLC, "prompt", "tr-set", "c.x", "Hi {name}", "fr", "Salut {name}", "--store", @path)
    assert_equal "Salut Ada", @store.render("c.x", { name: "Ada" }, lang: "fr")
  end

  def test_closed_and_bad_stores
    s = Tpl::Store.new(File.join(@dir, "c.db"))
    s.close
    assert s.closed?
    assert_raises(IOError) { s.list }
    junk = File.join(@dir, "junk.db")
    File.write(junk, "this is not a database" * 100)
    assert_raises(Tpl::Store::Error) { Tpl::Store.new(junk).list }
  end
end
