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

  # big results ask for minor GCs (tpl_ext.c gc_nudge) from inside Ractors too
  def test_ractors_big_results
    t = Tpl::Template.new("<%= s * 1000 %>", syntax: :erb)
    rs = 2.times.map { Ractor.new(t) { |tm| 100.times.sum { tm.render(s: "0123456789" * 10).bytesize } } }
    assert_equal [10_000_000, 10_000_000], rs.map(&:take)
  end
end
