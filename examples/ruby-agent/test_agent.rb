# The example agent's view rendered with tpl (Tpl::ERB) and with Ruby's ERB over the same sequence
# of states: every turn byte-equal (issue 20). Run by `meson test -C build ruby-agent`.
require "minitest/autorun"
require_relative "agent"

class TestAgent < Minitest::Test
  def test_turns_match_stdlib_erb
    steps = JSON.parse(File.read(File.join(__dir__, "steps.json")))
    ours = FrontDeskAgent.new(renderer: Tpl::ERB)
    ref = FrontDeskAgent.new(renderer: ERB)
    outs = steps.map do |step|
      want = ref.turn(step["state"], memory: step["memory"])
      got = ours.turn(step["state"], memory: step["memory"])
      assert_equal want, got, "turn with #{step['state'].keys.join(', ')}"
      got
    end
    assert_equal steps.size, outs.uniq.size, "every turn's view differs"
    assert_includes outs[2], "Memory mentions their usual doctor"
    assert_includes outs[4], "Read the chosen slot back (Tuesday 09:30 with Dr. Vidal)"
    assert_includes outs[7], "The call is getting long (8 turns)"
  end
end
