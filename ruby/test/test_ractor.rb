# Ractor sharing (issue 20): a Template (and a Page, a stored Prompt) is frozen and shareable;
# Ractors render one Template at once (the extension is marked Ractor-safe: no global state, the
# render-context pool is locked).
require "minitest/autorun"
require "tpl"

class TestRactor < Minitest::Test
  def setup
    @warn = Warning[:experimental]
    Warning[:experimental] = false
  end

  def teardown
    Warning[:experimental] = @warn
  end

  def test_template_is_shareable
    t = Tpl::Template.new("Hi {{ name }}")
    assert t.frozen?
    assert Ractor.shareable?(t)
    assert Ractor.shareable?(Tpl::Template.load(t.save))
  end

  def test_ractors_render_one_template
    t = Tpl::Template.new("<% xs.each do |x| %><%= x * k %>,<% end %><%= name %>", syntax: :erb)
    rs = 4.times.map do |i|
      Ractor.new(t, i) do |tm, k|
        500.times.map { tm.render(xs: [1, 2, 3], k: k, name: "r#{k}") }.uniq
      end
    end
    assert_equal 4.times.map { |k| ["#{k},#{2 * k},#{3 * k},r#{k}"] }, rs.map(&:take)
  end

  def test_errors_inside_a_ractor
    t = Tpl::Template.new("{{ 1 // n }}")
    r = Ractor.new(t) do |tm|
      tm.render(n: 0)
    rescue Tpl::Error => e
      [e.class.name, e.is_a?(Tpl::TypeError), e.line]
    end
    assert_equal ["Tpl::ZeroDivisionError", true, 1], r.take
  end

  # a Template stays shareable once it has rendered: its pooled contexts' key caches (which it
  # marks) are frozen and shareable, and hold only shareable keys (a frozen String whose @ivar
  # holds a mutable Array is not cached). It was deep-copied by Ractor.new into an uninitialized
  # Template instead.
  class Key < String; end
  def test_template_rendered_before_sharing
    t = Tpl::Template.new("<%= name %>:<%= h.map { |k, v| k.to_s + v.to_s }.join %>", syntax: :erb)
    odd = Key.new("odd")
    odd.instance_variable_set(:@x, [+"not shareable"])
    odd.freeze
    assert_equal "a:k1odd2s3", t.render({ "name" => "a", "h" => { "k" => 1, odd => 2, s: 3 } }.freeze)
    assert Ractor.shareable?(t)
    r = Ractor.new(t) { |tm| tm.render(name: "b", h: { "k" => 4, s: 5 }) }
    assert_equal "b:k4s5", r.take
    assert_equal "c:k6", t.render(name: "c", h: { "k" => 6 })
  end

  # the pool's lock is taken only once a second Ractor exists (tpl_ext.c pool_lock): in a fresh
  # process, threads of the main Ractor render one Template (unlocked, under the GVL) and go on
  # rendering it while Ractors are made and render it too (locked from then on, contexts taken
  # unlocked given back locked): every render gives its own text, and the pool serves all
  def test_pool_from_one_ractor_to_many
    code = <<~'RUBY'
      require "tpl"
      Warning[:experimental] = false
      t = Tpl::Template.new("<% xs.each do |x| %><%= x * k %>,<% end %><%= name %>", syntax: :erb)
      want = ->(k) { "#{k},#{2 * k},#{3 * k},r#{k}" }
      bad = 0
      ths = 3.times.map do |i|
        Thread.new { 3000.times { bad += 1 unless t.render(xs: [1, 2, 3], k: i, name: "r#{i}") == want.(i) } }
      end
      sleep 0.05
      rs = 3.times.map do |i|
        Ractor.new(t, i + 10) { |tm, k| 500.times.count { tm.render(xs: [1, 2, 3], k: k, name: "r#{k}") != "#{k},#{2 * k},#{3 * k},r#{k}" } }
      end
      ths.each(&:join)
      bad += rs.sum(&:take)
      200.times { |k| bad += 1 unless t.render(xs: [1, 2, 3], k: k, name: "r#{k}") == want.(k) }
      puts "bad=#{bad}"
    RUBY
    out = IO.popen([RbConfig.ruby, "-e", code], err: %i[child out], &:read)
    assert_equal "bad=0\n", out
  end

  # big results ask for minor GCs (tpl_ext.c gc_nudge) from inside Ractors too
  def test_ractors_big_results
    t = Tpl::Template.new("<%= s * 1000 %>", syntax: :erb)
    rs = 2.times.map { Ractor.new(t) { |tm| 100.times.sum { tm.render(s: "0123456789" * 10).bytesize } } }
    assert_equal [10_000_000, 10_000_000], rs.map(&:take)
  end
end
