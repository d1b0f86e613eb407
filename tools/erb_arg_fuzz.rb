#!/usr/bin/env ruby
# frozen_string_literal: false
# Differential sweep of the Ruby methods tpl implements (the RSTR/RARR/RHASH/RNUM/RRANGE rows of
# stdlib/builtins.def) called with wrong arity, wrong types, nil, huge and negative integers, floats
# for integers and unknown keywords: each call is one tag printing `[e.class, e.message]` (or the
# value's inspect), rendered by Ruby's ERB and by Tpl::ERB in this process; the exception class and
# message must be Ruby's, or tpl must refuse (Tpl::Error).
#
# usage: RUBYLIB=BUILD/ruby:ruby/lib ruby tools/erb_arg_fuzz.rb [N] [SEED] [--show K]
require "erb"
require "tpl"
require "timeout"
$VERBOSE = nil

n = (ARGV[0] || 3000).to_i
seed = (ARGV[1] || 1).to_i
show = ARGV.include?("--show") ? ARGV[ARGV.index("--show") + 1].to_i : 40
rng = Random.new(seed)

defs = File.read(File.join(__dir__, "..", "stdlib", "builtins.def"))
METHODS = Hash.new { |h, k| h[k] = [] }
defs.scan(/TPL_BUILTIN\((RSTR|RARR|RHASH|RNUM|RRANGE), \w+, "([^"]+)"/) { |cls, name| METHODS[cls] << name }
RECV = {
  "RSTR" => ['"abc"', '""', '"a,b"', '"héllo"'],
  "RARR" => ["[3, 1, 2]", "[]", "[[1, 2], [3, 4]]", '["a", "b"]', "[1, nil]"],
  "RHASH" => ["{a: 1, b: 2}", "{}", '{"k" => [1]}'],
  "RNUM" => ["7", "-3", "2.5", "0", "2**70"],
  "RRANGE" => ["(1..4)", "(1...4)", '("a".."c")', "(1.0..2.0)"],
}.freeze
BAD = ["nil", "2**64", "-1", "-(2**64)", "1.5", "-2.5", '"a"', ":a", "[1]", "{}", "true", "0", "10**10", "Float::NAN",
       "Float::INFINITY", "1r"].freeze

def args(rng)
  case rng.rand(6)
  when 0 then ""
  when 1 then "(#{BAD.sample(random: rng)})"
  when 2 then "(#{BAD.sample(random: rng)}, #{BAD.sample(random: rng)})"
  when 3 then "(#{BAD.sample(random: rng)}, #{BAD.sample(random: rng)}, #{BAD.sample(random: rng)})"
  when 4 then "(#{BAD.sample(random: rng)}, bogus: 1)"
  else "(bogus: #{BAD.sample(random: rng)})"
  end
end

def template(e) = "<%= begin; (#{e}).inspect; rescue => e; [e.class, e.message].inspect; end %>"

def run_erb(src)
  ERB.new(src, trim_mode: "-").result(binding)
rescue SyntaxError, StandardError, NoMemoryError => e
  "!#{e.class}"
end

def run_tpl(src)
  Tpl::ERB.new(src, trim_mode: "-").result_with_hash({})
rescue Tpl::Error => e
  [:refused, e.message.lines.first]
rescue StandardError, SyntaxError => e
  "!#{e.class}"
end

counts = Hash.new(0)
shown = 0
n.times do
  cls = METHODS.keys.sample(random: rng)
  m = METHODS[cls].sample(random: rng)
  next if m =~ /\A[a-z_]+=\z/ || m.start_with?("(")

  recv = RECV[cls].sample(random: rng)
  blk = rng.rand < 0.2 ? " { |*x| x }" : ""
  e = m =~ /\A\w/ ? "#{recv}.#{m}#{args(rng)}#{blk}" : "#{recv}.send(:#{m}#{args(rng).sub(/\A\(/, ', ').sub(/\)\z/, '')})"
  src = template(e)
  a = begin
    Timeout.timeout(2) { run_erb(src) }
  rescue Timeout::Error
    counts[:skipped] += 1
    next
  end
  next counts[:skipped] += 1 if a =~ /0x[0-9a-f]{6,}/

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
