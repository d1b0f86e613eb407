# Issue 20, session 35: a receiver-less call of a name tpl has a builtin for (format, sprintf,
# Integer, Float, String, Array, Hash, Rational, raise, tr, ...) is self's own method when the
# binding's self has one, as Ruby's method lookup finds it before Kernel's; Kernel methods tpl runs
# itself (loop, block_given?, raise without arguments) are a located refusal then. An endless each
# of a host object ends on the render's fuel.
require "minitest/autorun"
require "erb"
require "tpl"

class TestSelfMethods < Minitest::Test
  module Helpers
    def Integer(x) = "I#{x}"
  end

  class View
    include Helpers

    def initialize = @x = 5
    def format(x, *r) = "F#{x}#{r.inspect}"
    def tr(x) = "T#{x}"
    def Array(_x) = "A"
    def loop(*) = "L"
    def block_given? = "BG"
    private def sprintf(*a) = "S#{a.size}"

    def run(src, cls)
      format = 1 # a local of the name: a call with arguments is the method's all the same
      format.to_s
      cls.new(src, trim_mode: "-").result(binding)
    rescue StandardError, ScriptError => e
      [e.class, e.message]
    end
  end

  # no methods of its own: Kernel's (tpl's builtins)
  class Plain
    def run(src, cls) = cls.new(src, trim_mode: "-").result(binding)
  end

  SAME = ['<%= format("a") %>', '<%= format("%d", 3) %>', '<%= format("a", k: 1) %>', '<%= sprintf("%d", 3) %>',
          '<%= Integer("3") %>', '<%= Float("3") %>', '<%= tr("x") %>', '<%= Array(1) %>', '<%= @x %><%= format("a", 1) %>',
          '<% a = [1, 2] %><%= [*a].inspect %><%= [0, *a].size %>', '<% case 2 when *[1, 2] %>y<% end %>',
          '<%= String(5) %><%= ->(v) { v * 2 }.call(2) %>'].freeze

  def test_self_method_wins_over_the_builtin
    SAME.each do |src|
      assert_equal View.new.run(src, ERB), View.new.run(src, Tpl::ERB), src
      assert_equal Plain.new.run(src, ERB), Plain.new.run(src, Tpl::ERB), src unless src.include?("tr(")
    end
  end

  def test_singleton_method_and_result_with_hash_key
    o = Object.new
    def o.format(x, *) = "own #{x}"
    src = '<%= format("%s!", "a") %>'
    assert_equal "own %s!", Tpl::ERB.new(src).result(o.instance_eval { binding })
    assert_equal ERB.new(src).result(o.instance_eval { binding }), Tpl::ERB.new(src).result(o.instance_eval { binding })
    # a result_with_hash key named like the call is a local: the call is Kernel's
    assert_equal "a!", Tpl::ERB.new(src).result_with_hash(format: 1)
    assert_equal ERB.new(src).result_with_hash(format: 1), Tpl::ERB.new(src).result_with_hash(format: 1)
  end

  def test_kernel_method_tpl_runs_itself_refused_when_self_has_one
    ['<%= loop { break 3 } %>', '<%= block_given? %>', '<% def m; block_given?; end %><%= m %>'].each do |src|
      got = View.new.run(src, Tpl::ERB)
      name = src[/loop|block_given\?/]
      assert_equal ::SyntaxError, got[0], src
      assert_match(/\A\(erb\):1:\d+: error: unsupported Ruby construct: `#{Regexp.escape(name)}' is self's own method/, got[1])
      assert_equal ERB.new(src, trim_mode: "-").result(Plain.new.instance_eval { binding }),
                   Tpl::ERB.new(src, trim_mode: "-").result(Plain.new.instance_eval { binding }), src
    end
  end

  class Endless
    include Enumerable

    def each
      i = 0
      loop { yield i += 1 }
    end
  end

  def test_endless_each_ends_on_fuel
    %w[erb jinja].each do |syn|
      src = syn == "erb" ? "<% o.each do |x| %><% end %>" : "{% for x in o %}{% endfor %}"
      t0 = Process.clock_gettime(Process::CLOCK_MONOTONIC)
      e = assert_raises(Tpl::LimitError) do
        Tpl::Template.new(src, syntax: syn.to_sym).render({ o: Endless.new }, limits: { fuel: 50_000 })
      end
      assert_match(/<template>:1:\d+: error: .*fuel/, e.message)
      assert_operator Process.clock_gettime(Process::CLOCK_MONOTONIC) - t0, :<, 2
    end
  end

  # Under the default limits too, an endless each ends on the fuel (TPL_HOST_ITEM_FUEL an item),
  # before the 256 MiB memory limit (one unit an item let ~11 million items fill it first)
  def test_endless_each_default_limits_fuel_not_memory
    %w[erb jinja].each do |syn|
      src = syn == "erb" ? "<% o.each do |x| %><% end %>" : "{% for x in o %}{% endfor %}"
      e = assert_raises(Tpl::LimitError) { Tpl::Template.new(src, syntax: syn.to_sym).render({ o: Endless.new }) }
      assert_match(/fuel/, e.message)
    end
  end
end
