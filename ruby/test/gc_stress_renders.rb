# Renders under GC.stress with compaction (test_gc.rb runs this file in a fresh Ruby, where a
# [BUG] abort fails one test instead of ending the suite): Tpl::ERB with a Binding's locals,
# self's @ivars and remembers?, Tpl::Template with host objects, a remembers block and a
# compile-time loader, and Ruby exceptions raised in callbacks. `ruby gc_stress_renders.rb SEED`
# prints the results of a stressed round and of one render after, as JSON.
require "tpl"
require "json"
require_relative "helper"

module GCStressRenders
  ERB_SRC = <<~'SRC'
    <%= @title %>|<%= @items.join(",") %>|<%= @n %>|<%= @latin.encode("UTF-8") %>|<%= v.shout %>|<%= v.tags.map { |t| t.upcase }.join %>|<%= local_s %>|<%= remembers?("dog") %><%= remembers?("cat") %>
    <%- begin -%>
    <%= v.fail %>
    <%- rescue ArgumentError => e -%>
    rescued <%= e.message %>
    <%- end -%>
  SRC
  JINJA_SRC = "{{ v.name }}|{% for t in v.tags %}{{ t }};{% endfor %}|{{ h.k|join(',') }}|{{ remembers('dog') }}{{ remembers('cat') }}|{{ s }}|{{ big }}|{{ v.greet('Yo' ~ '!', sep='-' * 2) }}|{{ f('x' ~ 'y', 3) }}"

  View = Struct.new(:name, :tags) do
    def shout = name.upcase
    def fail = raise(ArgumentError, "no #{name}")
    def greet(greeting, sep: ", ") = "#{greeting}#{sep}#{name}"
  end

  class Page
    def initialize(seed)
      @title = +"T#{seed}"
      @items = [+"a", +"b" * 40, +"c\u00e9"]
      @n = 2**70 + seed
      @latin = "caf\xE9".dup.force_encoding("ISO-8859-1")
    end

    def remembers?(w) = w.start_with?("d")

    def bind(v, seed)
      local_s = +"loc#{seed}"
      [v, local_s]
      binding
    end
  end

  # a round's values (fresh objects: nothing is shared with the caller but the seed)
  def self.inputs(seed)
    v = View.new(+"ann#{seed}", [+"x", +"y" * 30])
    [Page.new(seed).bind(v, seed), { v: v, h: { k: [+"p", +"q#{seed}"] }, s: +"S" * (seed % 50), big: 2**65, f: ->(a, n) { a * n } }, { "s" => +"z#{seed}" }]
  end

  # the strings a round renders
  def self.renders(erb, jinja, inc, (binding, state, inc_state))
    [erb.result(binding), jinja.render(state) { |w| w == "dog" }, inc.render(inc_state)]
  end

  def self.run(seed)
    extend TplTestHelper
    srand(seed)
    junk = Array.new(rand(1_000..4_000)) { |i| "j#{i}" }.each_slice(2).map(&:first) # (holes to compact into)
    erb = Tpl::ERB.new(ERB_SRC, trim_mode: "-")
    jinja = Tpl::Template.new(JINJA_SRC)
    files = { "inc.jinja" => "[{{ s }}]" }
    inc = nil
    # an incremental major marking in progress when the stress starts, as the GC's timing may leave one
    GC.start(full_mark: true, immediate_mark: false, immediate_sweep: false)
    args = inputs(seed)
    got = under_gc_stress(1) do
      inc = Tpl::Template.new("a{% include 'inc.jinja' %}b", loader: ->(n) { files[n] })
      renders(erb, jinja, inc, args)
    end
    3.times { GC.start }
    got << renders(erb, jinja, inc, inputs(seed))
    junk.clear
    got
  end
end

puts JSON.generate(GCStressRenders.run(Integer(ARGV[0]))) if $PROGRAM_NAME == __FILE__
