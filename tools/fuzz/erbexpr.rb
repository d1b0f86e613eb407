#!/usr/bin/env ruby
# frozen_string_literal: false
# Differential fuzzer for Ruby core methods in ERB expressions: random method chains (1 to 3 calls)
# over Ruby core values (String, Symbol, Integer incl. Bignum and negative, Float incl. -0.0, NaN,
# Infinity, Array, Hash, Range, nil, true, false) with random arity, argument types and blocks, each
# one <%= %> tag rendered by Ruby's ERB and by Tpl::ERB in this process. The tag prints the value's
# inspect, or "!" with the class and message of the exception Ruby rescued (so error texts are
# compared too). Ruby 3.1's did_you_mean suffix of a NameError's message ("\nDid you mean?  ...") is
# counted apart (dym) and compared without it (a known difference: tpl has no suggestions).
# The oracle's documented deviation is applied to Ruby's side: Symbol#== / String#== equal :k and "k".
#
# usage: RUBYLIB=REPO/build/ruby:REPO/ruby/lib ruby erbexpr.rb N SEED [OUTDIR] [--show K] [--refused] [--class-only]
# (--class-only: an exception prints its class alone, for value differences before message texts)
# Prints counts: same, refused (Tpl::Error: tpl's located refusal), silent (other text: a bug),
# dym, other (tpl raised something else), skipped (Ruby timed out, printed an address, or the
# template is not Ruby). Silent findings go to OUTDIR/silent.txt (default /tmp/erbexpr).
require "erb"
require "fileutils"
require "timeout"
require "tpl"

require_relative "symbol_eq"

args = ARGV.dup
show = (i = args.index("--show")) ? args.slice!(i, 2)[1].to_i : 30
list_refused = !args.delete("--refused").nil?
CLASS_ONLY = !args.delete("--class-only").nil?
N = Integer(args[0] || 2000)
SEED = Integer(args[1] || 1)
OUT = args[2] || "/tmp/erbexpr"
FileUtils.mkdir_p(OUT)
R = Random.new(SEED)
def pick(a) = a[R.rand(a.size)]

VALUES = {
  int: ["0", "1", "-3", "7", "255", "2**64", "-(2**70)", "10**20", "-1", "36"],
  float: ["1.5", "-0.0", "2.0", "1e20", "0.1", "-2.5", "(0.0/0.0)", "(1.0/0)", "(-1.0/0)", "3.7"],
  str: ['"abc"', '""', '"a b c"', '"héllo"', '"Hello World"', '"12"', '"a,b,,c"', '"  pad  "', '"x\ny\n"', '"ß"',
        '"AbC"', '"1.5e3"', '"0x1f"', '"%d-%s"', '"a-b_c d"'],
  sym: [":abc", ":b", ":\"x y\"", ":é", ":A"],
  arr: ["[1, 2, 3]", "[]", "[3, 1, 2]", '["b", "a", "c"]', "[1, [2, [3]]]", "[nil, 1, nil]", "[1.5, 2]",
        "[[1, 2], [3, 4]]", '[:a, "a"]', "[1, 1, 2]", '[1, "a"]', "[-0.0, 0]", "[2**64, 1]", "[true, false]"],
  hash: ['{a: 1, "b" => 2}', "{}", "{x: [1, 2]}", '{1 => "a", 2 => "b"}', "{a: {b: {c: 1}}}", "{nil => 1}",
         "{1.5 => :x}", '{"k" => nil}'],
  range: ["(1..4)", "(1...4)", '("a".."c")', "(1..)", "(0.5..2)", "(4..1)", "(..3)", "(-2..2)", "(1..10).step(3)"],
  lit: ["nil", "true", "false"],
}.freeze
ALL = VALUES.values.flatten.freeze

METHODS = %w[
  abs ceil floor round truncate to_s to_i to_f to_r to_c to_a to_h inspect size length count first last min max
  minmax sum sort sort_by reverse uniq compact flatten zip take drop take_while drop_while each each_with_index
  map flat_map select filter reject find detect find_index index rindex include? member? any? all? none? one?
  group_by partition chunk_while slice_when each_slice each_cons each_with_object inject reduce tally min_by
  max_by minmax_by filter_map rotate push pop shift unshift insert concat join upcase downcase capitalize
  swapcase strip lstrip rstrip chomp chop chars bytes lines split center ljust rjust start_with? end_with? sub
  gsub tr delete squeeze succ next ord chr hex oct empty? nil? zero? positive? negative? even? odd? divmod fdiv
  pow gcd lcm digits bit_length between? clamp keys values key? has_key? value? fetch dig values_at slice
  except merge transform_values transform_keys invert key freeze frozen? dup itself then class is_a? eql?
  equal? to_sym entries each_char each_line scan match? tr_s sum product combination permutation transpose
  assoc rassoc fill union difference intersection intersect? each_key each_value sort! uniq! compact!
  flatten! reverse! delete_if keep_if each_index find_all collect exclude_end? cover? begin end step % + - *
  ** / < <= > >= <=> == === & | ^ << >> [] at values_at cycle sample_size coerce nonzero? finite? infinite?
  nan? integer? quo remainder modulo div succ pred times upto downto format center partition rpartition
  casecmp casecmp? count delete_prefix delete_suffix each_pair filter_map sum to_proc bsearch pack unpack
  unpack1 mode sum_by uniq_by dig none? each_entry zip rindex slice! delete_at insert
].uniq.freeze

OPERATORS = %w[% + - * ** / < <= > >= <=> == === & | ^ << >>].freeze

ARGS = ["", "", "", "(0)", "(1)", "(2)", "(-1)", '("a")', "(:a)", "(1, 2)", "([1])", "(nil)", "(1.5)", '("")',
        "(0..1)", "({a: 1})", '("b", "x")', "(3)", "(:abc)", '("abc")', "(2, 1)", "(true)", "(2**64)", "(-0.0)",
        '(/b/)', '(/(a)(b)?/, "x")', "(1, 2, 3)", "(*[1, 2])", "(x: 1)", '(" ")', "(10)"].freeze

BLOCKS = ["", "", "", "", " { |x| x }", " { |x| x.to_s }", " { |a, b| [a, b] }", " { |x| x.nil? }", " { |x| 1 }",
          " { |x, y| x }", " { |x| x.is_a?(Integer) && x > 1 }", " { |a, b| b }", " { |x| break 7 }",
          " { |x| next 3 }", " { |x| [x] }", " { |*a| a }", " { |a, (b, c)| [a, b, c] }", " { |x| x <=> 1 }",
          " { |a, b| a <=> b }", " { nil }", " { |x, i| i }", " { |k, v| v }", " { |x| x.to_s.size }"].freeze

def call(recv)
  m = pick(METHODS)
  if OPERATORS.include?(m)
    return "(#{recv} #{m} #{pick(ALL)})"
  end
  return "#{recv}[#{pick(ARGS).delete_prefix('(').delete_suffix(')')}]" if m == "[]"
  "#{recv}.#{m}#{pick(ARGS)}#{pick(BLOCKS)}"
end

def expression
  e = pick(VALUES[pick(VALUES.keys)])
  R.rand(1..3).times { e = call(e) }
  e
end

def tag(expr)
  msg = CLASS_ONLY ? "" : ' + ":" + e.message'
  %(<%= begin; (#{expr}).inspect; rescue StandardError => e; "!" + e.class.name#{msg}; end %>)
end

def ruby_render(src)
  b = Object.new.instance_eval { binding }
  Timeout.timeout(0.5) { ERB.new(src, trim_mode: "-").result(b) }
rescue Timeout::Error, SystemStackError, NoMemoryError
  :skip
rescue ScriptError, StandardError
  :skip
end

def tpl_render(src)
  Tpl::ERB.new(src, trim_mode: "-").result_with_hash({})
rescue Tpl::Error => e
  [:refused, e.message.lines.first.to_s.chomp]
rescue StandardError, ScriptError => e
  [:other, "#{e.class}: #{e.message.lines.first}"]
end

DYM = /\nDid you mean\?.*\z/m
counts = Hash.new(0)
silent = []
refused = Hash.new(0)
seen = {}
N.times do
  expr = expression
  next if seen[expr]
  seen[expr] = true
  src = tag(expr)
  want = ruby_render(src)
  if want == :skip || want.include?("0x0") || want.include?("#<Proc") || want.include?("#<Method")
    counts[:skipped] += 1
    next
  end
  got = tpl_render(src)
  if got.is_a?(Array)
    counts[got[0]] += 1
    refused[got[1].sub(/\A.*?error: /, "")[0, 90]] += 1 if got[0] == :refused
    silent << [expr, want, got[1]] if got[0] == :other
  elsif got == want
    counts[:same] += 1
  elsif got == want.sub(DYM, "") || got == want.gsub(/\nDid you mean\?.*?(?=["\]]|\z)/m, "")
    counts[:dym] += 1
  else
    counts[:silent] += 1
    silent << [expr, want, got]
  end
end

File.open(File.join(OUT, "silent.txt"), "w") do |f|
  silent.each { |e, w, g| f.puts "EXPR #{e}\n  ruby: #{w}\n  tpl : #{g}" }
end
silent.first(show).each { |e, w, g| puts "SILENT #{e}\n   ruby: #{w[0, 240]}\n   tpl : #{g.to_s[0, 240]}" }
refused.sort_by { |_, c| -c }.first(40).each { |m, c| puts "REFUSED x#{c}: #{m}" } if list_refused
puts "seed #{SEED}: #{counts[:same]} same, #{counts[:refused]} refused, #{counts[:silent]} silent, " \
     "#{counts[:dym]} dym, #{counts[:other]} other, #{counts[:skipped]} skipped"
exit(counts[:silent] + counts[:other] > 0 ? 1 : 0)
