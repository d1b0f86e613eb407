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

  # (issue 20 #1) 100,000 Template.new + render in a loop, in a fresh Ruby: its RSS stays within
  # a few MB (~10 MB here), as Ruby's GC is told each Template's malloc'd memory (tpl_ext.c
  # tmpl_tell_gc) and runs as it grows. Untold (-DTPL_GC_TELL=0) the GC ran as Ruby's own
  # objects alone asked (~130 times instead of ~1,800) and RSS grew ~120 MB.
  def test_rss_flat_for_templates_made_in_a_loop
    code = <<~'RUBY'
      require "tpl"
      rss = -> { File.read("/proc/self/status")[/VmRSS:\s+(\d+)/, 1].to_i }
      src = "Hello {{ name }}! {% for x in items %}{{ x }},{% endfor %}"
      make = ->(i) { Tpl::Template.new(src).render(name: "a#{i}", items: [1, 2, 3]) == "Hello a#{i}! 1,2,3," or raise "render" }
      2_000.times(&make)
      GC.start
      base = rss.()
      100_000.times(&make)
      puts((rss.() - base) >> 10)
    RUBY
    out = IO.popen([RbConfig.ruby, "-e", code], err: [:child, :out], &:read)
    assert $?.success?, out
    assert_operator out.to_i, :<, 40, "RSS grew #{out.to_i} MB"
  end
end
