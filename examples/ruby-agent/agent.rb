# A Pinecall-style Ruby agent (issue 20): the agent keeps the call's state, and each turn renders
# its view with ERB in the binding of a context object whose unknown names read the state, plus
# helper methods and instance variables. Rendering with tpl is one constant: RENDERER.
#   ruby -I../../ruby/lib -I../../build/ruby agent.rb steps.json      (prints every turn's view)
require "erb"
require "json"
require "tpl"

class FrontDeskAgent
  VIEW = File.read(File.join(__dir__, "views", "front_desk.erb"))

  # The binding's self: state names through method_missing, helpers as methods, @turns an ivar.
  class Context
    def initialize(state, memory, turns)
      @state = state
      @memory = memory
      @turns = turns
    end

    def remembers?(words) = @memory.any? { |fact| fact.include?(words) }

    def slot_label(slot)
      who = slot["doctor"] || "any doctor"
      "#{slot['day']} #{slot['time']} with #{who}"
    end

    def method_missing(name, *args)
      key = name.to_s
      return @state[key] if args.empty? && @state.key?(key)

      super
    end

    def respond_to_missing?(name, priv = false) = @state.key?(name.to_s) || super

    def view_binding = binding
  end

  DEFAULTS = { "stage" => "identify", "patient" => nil, "slots" => [], "channel" => "phone", "chosen" => nil }.freeze

  def initialize(renderer: Tpl::ERB)
    @view = renderer.new(VIEW, trim_mode: "-")
    @state = DEFAULTS.dup
    @memory = []
    @turns = 0
  end

  # One turn: merge what changed, render the view for the model.
  def turn(changes, memory: nil)
    @state = @state.merge(changes)
    @memory = memory if memory
    @turns += 1
    @view.result(Context.new(@state, @memory, @turns).view_binding)
  end
end

if $PROGRAM_NAME == __FILE__
  agent = FrontDeskAgent.new
  JSON.parse(File.read(ARGV.fetch(0, File.join(__dir__, "steps.json")))).each_with_index do |step, i|
    puts "── turn #{i + 1} ──", agent.turn(step["state"], memory: step["memory"])
  end
end
