# Shared by the Ruby suite's files.

module TplTestHelper
  # The block's values for rounds 0...rounds, each run with GC.stress on and, where the Ruby has
  # it, auto-compaction: every allocation collects and may move objects. The caller asserts on
  # the values after (GC.stress is off then); the GC settings are restored.
  #
  # A GC in progress is finished (GC.start) before auto-compaction is turned on: Ruby 3.1.2 ends
  # an incremental major marking begun with auto-compaction off by compacting the heap when the
  # flag is on by then, although that marking pinned nothing (pins are only taken while
  # compacting), so objects that are pinned, held by C memory Ruby does not update (the main
  # Ractor's object, whose rb_ractor_t keeps its address), moved: "[BUG] try to mark T_NONE
  # object" at a later GC, with no tpl code involved — plain Ruby:
  #   GC.start(full_mark: true, immediate_mark: false, immediate_sweep: false)
  #   GC.auto_compact = true; GC.stress = true; Object.new # => [BUG] try to mark T_NONE object
  # Which GC is in progress when a test starts depends on the suite's order and on the GC's
  # timing (minitest seed 27497 with the GC told a Template's memory; gc_stress_renders.rb
  # leaves one in progress on purpose).
  def under_gc_stress(rounds)
    compact = GC.respond_to?(:auto_compact=) && (GC.auto_compact rescue nil)
    begin
      if GC.respond_to?(:auto_compact=)
        GC.start
        GC.auto_compact = true
      end
      rounds.times.map do |i|
        GC.stress = true
        yield i
      ensure
        GC.stress = false
      end
    ensure
      GC.stress = false
      GC.auto_compact = compact if GC.respond_to?(:auto_compact=) && !compact.nil?
    end
  end
end
