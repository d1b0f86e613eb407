#!/usr/bin/env ruby
# frozen_string_literal: false
# Differential fuzzing of evaluation order and exception classes in ERB expressions: random chains of
# operators (+ - * % << == <=> && || ?:), string interpolation, method arguments, Array/Hash literals
# and safe navigation (&.), whose operands may raise (IndexError, KeyError, ZeroDivisionError,
# NoMethodError, TypeError, ArgumentError, RuntimeError) or change a variable (s << "!"). Each
# expression is one tag, `begin; EXPR; rescue => e; [e.class, e.message]; end` followed by the
# variables it may change, rendered by Ruby's ERB and by Tpl::ERB in this process.
#
# usage: RUBYLIB=BUILD/ruby:ruby/lib ruby tools/erb_order_fuzz.rb [N] [SEED] [--show K]
# Prints counts: same, refused (tpl raised Tpl::Error: a located refusal), silent (different text).
require "erb"
require "tpl"
require "timeout"
$VERBOSE = nil

n = (ARGV[0] || 2000).to_i
seed = (ARGV[1] || 1).to_i
show = ARGV.include?("--show") ? ARGV[ARGV.index("--show") + 1].to_i : 30
R = Random.new(seed)

def pick(a) = a[R.rand(a.size)]

RAISING = ["[].fetch(3)", "{}.fetch(:k)", "(1 / 0)", "nil.upcase", "Integer(\"x\")", "raise(\"r\")", "(1 + nil)",
           "(\"a\" + 1)", "[1].first(-1)", "(s << \"!\")", "(acc << 1)", "(x += 1)", "y.size", "(2**62 * 4).chr"].freeze
VALUES = ["x", "s", "z", "y", "n", "acc", "1", "2.5", "\"a\"", "[1]", "{a: 1}", ":k", "nil", "true", "@v", "(x = 7)",
          "s.size", "acc.size"].freeze
BINOPS = ["+", "-", "*", "%", "<<", "==", "<=>", "&&", "||", "!=", ">", "<", "&", "|", "**", "/"].freeze

def atom(d)
  return pick(R.rand < 0.3 ? RAISING : VALUES) if d > 2 || R.rand < 0.45

  case R.rand(11)
  when 0..3 then chain(d)
  when 4 then "(#{atom(d + 1)} ? #{atom(d + 1)} : #{atom(d + 1)})"
  when 5 then "\"#{Array.new(R.rand(1..3)) { "\#{#{atom(d + 1)}}" }.join('-')}\""
  when 6 then "[#{Array.new(R.rand(1..3)) { atom(d + 1) }.join(', ')}]"
  when 7 then "{#{Array.new(R.rand(1..3)) { |i| "k#{i}: #{atom(d + 1)}" }.join(', ')}}"
  when 8 then "#{atom(d + 1)}&.#{pick(%w[to_s size upcase inspect])}"
  when 9 then "#{atom(d + 1)}.#{pick(['fetch', 'center', 'push', 'include?', 'first', 'ljust', 'index', 'count'])}(#{Array.new(R.rand(1..2)) { atom(d + 1) }.join(', ')})"
  else "format(\"%s %s\", #{atom(d + 1)}, #{atom(d + 1)})"
  end
end

def chain(d)
  k = R.rand(2..5)
  ops = Array.new(k - 1) { R.rand < 0.5 ? "+" : pick(BINOPS) }
  out = atom(d + 1)
  ops.each { |o| out = "#{out} #{o} #{atom(d + 1)}" }
  R.rand < 0.3 ? "(#{out})" : out
end

def template(e) = "<%= begin; (#{e}).inspect; rescue => e; [e.class, e.message].inspect; end %>|<%= [x, s, acc, z].inspect %>"

def run_erb(src)
  x = 1; y = nil; z = "q"; s = +"hey"; n = 2; acc = [] # rubocop:disable Lint/UselessAssignment
  @v = nil
  ERB.new(src, trim_mode: "-").result(binding)
rescue SyntaxError, StandardError, NoMemoryError => e
  "!#{e.class}"
end

def run_tpl(src)
  Tpl::ERB.new(src, trim_mode: "-").result_with_hash("x" => 1, "y" => nil, "z" => "q", "s" => +"hey", "n" => 2, "acc" => [])
rescue Tpl::Error => e
  [:refused, e.message.lines.first]
rescue StandardError, SyntaxError => e
  "!#{e.class}"
end

counts = Hash.new(0)
shown = 0
n.times do
  e = chain(0)
  src = template(e)
  a = begin
    Timeout.timeout(2) { run_erb(src) }
  rescue Timeout::Error
    counts[:skipped] += 1
    next
  end
  b = run_tpl(src)
  kind = if b.is_a?(Array) then :refused
         elsif a == b then :same
         else :silent
         end
  counts[kind] += 1
  next unless kind == :silent && shown < show

  shown += 1
  puts "EXPR: #{e}\n  ruby: #{a}\n  tpl:  #{b}"
end
p counts
