# Ruby's GC and the gem (issue 20 #1, #2): renders under GC.stress with compaction, and the C
# memory of Templates made in a loop.
require "minitest/autorun"
require "tpl"
require "erb"
require "json"
require "rbconfig"
require_relative "helper"
require_relative "gc_stress_renders"

class TestGC < Minitest::Test
  include TplTestHelper

  # gc_stress_renders.rb in a fresh Ruby, per seed (the seed sizes the heap's garbage, so the
  # objects compaction moves and where): a [BUG] abort there fails this test, not the suite.
  # Each run starts an incremental major marking before the stress (as a suite's GC timing may
  # leave one when a test starts, which under_gc_stress finishes before turning
  # auto-compaction on: helper.rb). Its results, round by round, are Ruby's ERB's and the
  # Jinja text the same renders give without the stress.
  def test_renders_under_gc_stress_with_compaction_several_seeds
    [1, 2, 27497].each do |seed|
      out = IO.popen([RbConfig.ruby, File.join(__dir__, "gc_stress_renders.rb"), seed.to_s], err: [:child, :out], &:read)
      assert $?.success?, "seed #{seed}: #{out[0, 2000]}"
      rounds = JSON.parse(out.lines.last)
      binding, = GCStressRenders.inputs(seed)
      want = [ERB.new(GCStressRenders::ERB_SRC, trim_mode: "-").result(binding),
              "ann#{seed}|x;#{"y" * 30};|p,q#{seed}|TrueFalse|#{"S" * (seed % 50)}|36893488147419103232|Yo!--ann#{seed}|xyxyxy",
              "a[z#{seed}]b"]
      assert_equal 2, rounds.size
      rounds.each_with_index { |got, i| assert_equal want, got, "seed #{seed}, round #{i}" }
    end
  end
end
