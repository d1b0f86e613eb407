# Instructions per render from Ruby, for callgrind (issue 20): renders one shared-harness ERB
# workload N times with one engine, in the setup of bench/ruby_bench.rb (erubi: a method compiled
# on a view object whose @ivars hold the context; tpl-erb: Tpl::ERB#result(binding) on the same
# kind of view; tpl-hash: Tpl::Template#render(context, facts: memory); tpl-facts: the same as
# Tpl::Template#render_facts(context, memory), facts positional (no keyword Hash); erubi-hash: Erubi's
# method given the context Hash each render, its entries assigned to @ivars first). Count a run with N
# renders and one with 0 and divide the difference by N:
#   RUBYLIB=build/ruby:ruby/lib valgrind --tool=callgrind ruby bench/ruby_count.rb w4_chat tpl-hash 2000
#   (the same with 0; "Collected" of each)
require "erb"
require "erubi"
require "json"
require "tpl"

wl, eng, n = ARGV[0], ARGV[1], Integer(ARGV[2])
wdir = ENV.fetch("WORKLOADS", File.expand_path("../../shared/bench/workloads", __dir__))
src = File.read(File.join(wdir, wl, "template.erb"), encoding: "UTF-8")
ctx = JSON.parse(File.read(File.join(wdir, wl, "context.json"), encoding: "UTF-8"))

class View
  def initialize(ctx)
    ctx.each { |k, v| instance_variable_set("@#{k}", v) }
    @memory ||= []
  end

  def remembers(x) = @memory.include?(x)
  def bind = binding
end

erubi_view = Class.new(View) { class_eval("def render\n#{Erubi::Engine.new(src).src}\nend", "template.erb", 0) }.new(ctx)
pre = ctx.keys.map { |k| "@#{k} = h[#{k.inspect}]" }.join("; ")
erubi_hash_view = Class.new(View) { class_eval("def render_hash(h)\n#{pre}\n#{Erubi::Engine.new(src).src}\nend", "template.erb", -1) }.new({})
b = View.new(ctx).bind
terb = Tpl::ERB.new(src, trim_mode: "-")
thash = Tpl::Template.new(src, syntax: :erb, name: "template.erb")
memory = ctx["memory"] || []
fn = { "erubi" => -> { erubi_view.render }, "erubi-hash" => -> { erubi_hash_view.render_hash(ctx) }, "tpl-erb" => -> { terb.result(b) },
       "tpl-hash" => -> { thash.render(ctx, facts: memory) }, "tpl-facts" => -> { thash.render_facts(ctx, memory) } }.fetch(eng)
3.times { fn.call }
GC.start
n.times { fn.call }
