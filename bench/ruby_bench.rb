# tpl vs Erubi vs stdlib ERB from Ruby, in one process, on the shared harness's ERB workloads
# (issue 20): w1_agent w2_loop w4_chat w5_format by default. Per render, context conversion
# included: Erubi and ERB run a method compiled from the template on a view object whose
# instance variables hold the context (as ../shared/bench/engines/ruby/bench.rb does);
# tpl-erb renders the same template with Tpl::ERB#result(binding) on the same view object (its
# @ivars, its remembers method, read through the host-value protocol); tpl-hash renders it with
# Tpl::Template#render(context Hash, facts: memory) (plain data, GVL released). erubi-hash is
# Erubi given the same context Hash on every render, as tpl-hash is: its method first assigns
# the Hash's entries to the view's @ivars (a preamble of one `@k = h["k"]` per top-level key,
# compiled with the method as Tilt compiles a locals preamble; the view object is reused), then
# runs Erubi's code — the cheapest way for Erubi to take a Hash, so x(h/h) = erubi-hash /
# tpl-hash is the like-for-like ratio (issue 20: context conversion included on both sides);
# x(erb) and x(hash) keep Erubi's context set once, outside the timing, as the shared harness
# does. Every output is checked against the workload's expected.txt.
#   RUBYLIB=build/ruby:ruby/lib ruby [--yjit] bench/ruby_bench.rb [WORKLOADS_DIR] [w1_agent,...]
# BENCH_TIME=seconds per measurement (1.0); BENCH_CLOCK=cpu times the process's CPU time
# (CLOCK_PROCESS_CPUTIME_ID) instead of wall time: on a loaded machine it counts only the time
# the process ran (the GC's threads included), not the time it waited for a CPU. BENCH_REPS=N
# batches per engine (3), BENCH_STAT=min reports the fastest batch instead of the median (on a
# shared machine the other processes only ever add time).
require "erb"
require "erubi"
require "json"
require "tpl"

BENCH_TIME = Float(ENV.fetch("BENCH_TIME", "1.0"))
BENCH_REPS = Integer(ENV.fetch("BENCH_REPS", "3"))
BENCH_STAT = ENV.fetch("BENCH_STAT", "median")
abort "BENCH_STAT: min or median" unless %w[min median].include?(BENCH_STAT)
wdir = ARGV[0] || File.expand_path("../../shared/bench/workloads", __dir__)
only = (ARGV[1] || "w1_agent,w2_loop,w4_chat,w5_format").split(",")

CLOCK = { "wall" => Process::CLOCK_MONOTONIC, "cpu" => Process::CLOCK_PROCESS_CPUTIME_ID }.fetch(ENV.fetch("BENCH_CLOCK", "wall"))
def now_ns = Process.clock_gettime(CLOCK, :nanosecond)

# the shared harness's protocol: warm up, size N from the warm-up rate, time N calls (ns/render)
def measure(target_s)
  n = 0
  t0 = now_ns
  el = 0
  loop do
    yield
    n += 1
    el = now_ns - t0
    break if n >= 2 && el >= [0.25 * target_s, 0.3].min * 1e9
  end
  per = el.to_f / n
  4.times do
    iters = [1, (target_s * 1e9 / per).to_i].max
    t0 = now_ns
    iters.times { yield }
    el = now_ns - t0
    per = el.to_f / iters
    break if el >= 0.5 * target_s * 1e9
  end
  per
end

class View
  def initialize(ctx)
    ctx.each { |k, v| instance_variable_set("@#{k}", v) }
    @memory ||= []
  end

  def remembers(x) = @memory.include?(x)
  def bind = binding
end

yjit = defined?(RubyVM::YJIT) && RubyVM::YJIT.enabled? ? " +YJIT" : ""
clock = CLOCK == Process::CLOCK_MONOTONIC ? "wall" : "CPU"
# glibc's heap trimming changes the figures (bench/RESULTS.md, session 22): the run says when it is set
trim = ENV["MALLOC_TRIM_THRESHOLD_"] ? ", MALLOC_TRIM_THRESHOLD_=#{ENV["MALLOC_TRIM_THRESHOLD_"]}" : ""
puts "ruby #{RUBY_VERSION}#{yjit}, erubi #{Erubi::VERSION}, tpl #{Tpl::VERSION}#{trim}; #{clock} ns per render (#{BENCH_STAT} of #{BENCH_REPS}), ratio = erubi / tpl (x(h/h): erubi-hash / tpl-hash)"
puts format("%-10s %10s %10s %10s %10s %10s %8s %8s %8s", "workload", "erubi", "erubi-hash", "erb", "tpl-erb", "tpl-hash", "x(erb)",
            "x(hash)", "x(h/h)")
only.each do |wl|
  src = File.read(File.join(wdir, wl, "template.erb"), encoding: "UTF-8")
  ctx = JSON.parse(File.read(File.join(wdir, wl, "context.json"), encoding: "UTF-8"))
  want = File.read(File.join(wdir, wl, "expected.txt"), encoding: "UTF-8")
  erubi_view = Class.new(View) { class_eval("def render\n#{Erubi::Engine.new(src).src}\nend", "template.erb", 0) }.new(ctx)
  pre = ctx.keys.map { |k| "@#{k} = h[#{k.inspect}]" }.join("; ")
  erubi_hash_view = Class.new(View) { class_eval("def render_hash(h)\n#{pre}\n#{Erubi::Engine.new(src).src}\nend", "template.erb", -1) }.new({})
  erb_view = Class.new(View).tap { |k| ERB.new(src, trim_mode: "-").def_method(k, "render()", "template.erb") }.new(ctx)
  tview = View.new(ctx)
  b = tview.bind
  terb = Tpl::ERB.new(src, trim_mode: "-")
  thash = Tpl::Template.new(src, syntax: :erb, name: "template.erb")
  memory = ctx["memory"] || []
  engines = {
    "erubi" => -> { erubi_view.render },
    "erubi-hash" => -> { erubi_hash_view.render_hash(ctx) },
    "erb" => -> { erb_view.render },
    "tpl-erb" => -> { terb.result(b) },
    "tpl-hash" => -> { thash.render(ctx, facts: memory) },
  }
  engines.each do |name, fn|
    out = fn.call
    abort "#{name} #{wl}: output differs from expected.txt" unless out == want
  end
  times = Hash.new { |h, k| h[k] = [] }
  BENCH_REPS.times { |rep| engines.keys.rotate(rep).each { |name| GC.start; times[name] << measure(BENCH_TIME, &engines[name]) } }
  med = times.transform_values { |v| BENCH_STAT == "min" ? v.min : v.sort[v.size / 2] }
  puts format("%-10s %10.0f %10.0f %10.0f %10.0f %10.0f %8.1f %8.1f %8.1f", wl, med["erubi"], med["erubi-hash"], med["erb"],
              med["tpl-erb"], med["tpl-hash"], med["erubi"] / med["tpl-erb"], med["erubi"] / med["tpl-hash"],
              med["erubi-hash"] / med["tpl-hash"])
end
