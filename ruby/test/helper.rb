# Shared by the Ruby suite's files.

module TplTestHelper
  # The block's values for rounds 0...rounds, each run with GC.stress on and, where the Ruby has
  # it, auto-compaction: every allocation collects and may move objects. The caller asserts on
  # the values after (GC.stress is off then); the GC settings are restored.
  def under_gc_stress(rounds)
    compact = GC.respond_to?(:auto_compact=) && (GC.auto_compact rescue nil)
    begin
      GC.auto_compact = true if GC.respond_to?(:auto_compact=)
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
