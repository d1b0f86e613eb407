#!/usr/bin/env ruby
# frozen_string_literal: false
# Differential fuzzing of Ruby core methods: random receivers (Integer, Float, String, Array, Hash,
# Range, nil, Symbol, true/false) x random core methods x random arguments and blocks, each rendered
# as one ERB tag by tplc and by Ruby's own ERB in this process (with the reference harness's documented
# deviation: Symbol#== and String#== equal for :k and "k"). The tag prints the value's inspect, or "!"
# and the exception class Ruby rescued. A development tool; what it finds becomes oracle-blessed cases.
#
# usage: erb_method_fuzz.rb TPLC [N] [SEED] [--show K] [--refused]
#   N: expressions (default 2000); SEED: random seed (default 1)
#   --show K: print the first K silent differences (default 40); --refused: also list refusals
# Prints counts: same (tpl printed Ruby's text), refused (tpl exit 1: an error, never different text),
# silent (tpl exit 0 with other text: a bug), skipped (Ruby timed out or the text is not deterministic).
require "erb"
require "json"
require "open3"
require "timeout"

require_relative "fuzz/symbol_eq"

tplc = ARGV[0] or abort "usage: erb_method_fuzz.rb TPLC [N] [SEED] [--show K] [--refused]"
rest = ARGV[1..].reject { |a| a.start_with?("--") || a =~ /\A\d+\z/ && ARGV[ARGV.index(a) - 1] == "--show" }
n = (rest[0] || 2000).to_i
seed = (rest[1] || 1).to_i
show = ARGV.include?("--show") ? ARGV[ARGV.index("--show") + 1].to_i : 40
list_refused = ARGV.include?("--refused")
rng = Random.new(seed)

RECV = {
  int: ["0", "1", "-3", "7", "255", "2**70", "-(2**64)"],
  float: ["1.5", "-0.0", "2.0", "1e20", "0.1", "-2.5"],
  str: ['"abc"', '""', '"a b c"', '"héllo"', '"Hello World"', '"12"', '"a,b,,c"', '"  pad  "'],
  arr: ["[1, 2, 3]", "[]", "[3, 1, 2]", '["b", "a", "c"]', "[1, [2, [3, [4]]]]", "[nil, 1, nil]", "[1.5, 2]",
        "[[1, 2], [3, 4]]", '[:a, "a"]', "[1, 1, 2]"],
  hash: ['{a: 1, "b" => 2}', "{}", "{x: [1, 2]}", '{1 => "a", 2 => "b"}', '{"k" => 1, k: 2}', "{a: {b: {c: 1}}}"],
  range: ["(1..4)", "(1...4)", '("a".."c")', "(1..)", "(0.5..2)", "(4..1)", "(..3)"],
  nil: ["nil"],
  sym: [":abc", ":b", ":\"x y\""],
  bool: ["true", "false"],
}.freeze

METHODS = %w[
  abs ceil floor round truncate to_s to_i to_f to_r to_a to_h inspect size length count first last min max minmax
  sum sort sort_by reverse uniq compact flatten zip take drop take_while drop_while each each_with_index map
  flat_map select filter reject find detect find_index index rindex include? member? any? all? none? one?
  group_by partition chunk_while slice_when each_slice each_cons each_with_object inject reduce tally min_by
  max_by minmax_by sum filter_map cycle rotate sample shuffle push pop shift unshift insert concat join
  upcase downcase capitalize swapcase strip lstrip rstrip chomp chop chars bytes lines split center ljust rjust
  start_with? end_with? sub gsub tr delete squeeze count succ next ord chr hex oct empty? nil? zero? positive?
  negative? even? odd? divmod fdiv pow gcd lcm digits bit_length times upto downto step between? clamp
  keys values key? has_key? value? fetch dig values_at slice except merge transform_values transform_keys
  invert key to_set freeze frozen? dup itself then class is_a? eql? equal? hash encoding to_sym to_proc
  entries each_char each_line scan match match? =~ tr_s each_entry lazy sum product combination permutation
  transpose assoc rassoc fill union difference intersection intersect? dig each_key each_value sort! uniq!
  compact! flatten! reverse! delete_if keep_if filter_map each_index find_all collect collect_concat
  exclude_end? cover? begin end step % + - * ** / < <= > >= <=> == === & | ^ << >> [] size
].uniq.freeze

ARGS = ["", "", "", "(0)", "(1)", "(2)", "(-1)", '("a")', "(:a)", "(1, 2)", "([1])", "(nil)", "(1.5)", '("")',
        "(0..1)", "({a: 1})", '("b", "x")', "(3)", "(:abc)", '("abc")', "(2, 1)", "(true)"].freeze

BLOCKS = ["", "", "", " { |x| x }", " { |x| x.to_s }", " { |a, b| [a, b] }", " { |x| x.nil? }", " { |x| 1 }",
          " { |x, y| x }", " { |x| x.is_a?(Integer) && x > 1 }", " { |a, b| b }", " { |x| break 7 }",
          " { |x| next 3 }", " { |x| [x] }"].freeze

OPERATORS = %w[% + - * ** / < <= > >= <=> == === & | ^ << >>].freeze

def expression(rng)
  kind = RECV.keys.sample(random: rng)
  recv = RECV[kind].sample(random: rng)
  m = METHODS.sample(random: rng)
  if OPERATORS.include?(m)
    arg = (RECV.values.flatten + ["1", "2", '"a"']).sample(random: rng)
    return "#{recv} #{m} #{arg}"
  end
  return "#{recv}[#{ARGS.sample(random: rng).delete_prefix('(').delete_suffix(')')}]" if m == "[]"
  "#{recv}.#{m}#{ARGS.sample(random: rng)}#{BLOCKS.sample(random: rng)}"
end

def tag(expr)
  %(<%= begin; (#{expr}).inspect; rescue StandardError => e; "!" + e.class.name; end %>)
end

def ruby_render(src)
  obj = Object.new
  b = obj.instance_eval { binding }
  Timeout.timeout(0.5) { ERB.new(src, trim_mode: "-").result(b) }
rescue Timeout::Error
  :timeout
rescue ScriptError, StandardError => e
  "!!" + e.class.name
rescue SystemStackError, NoMemoryError
  :timeout
end

counts = Hash.new(0)
silent = []
refused = []
seen = {}
n.times do
  expr = expression(rng)
  next if seen[expr]
  seen[expr] = true
  src = tag(expr)
  want = ruby_render(src)
  if want == :timeout || want.is_a?(String) && (want.include?("0x0") || want.start_with?("!!"))
    counts[:skipped] += 1
    next
  end
  out, err, st = Open3.capture3("timeout", "10", tplc, "render", "-", "--syntax", "erb", "--fuel", "20000000",
                                "--max-output", "1000000", stdin_data: src)
  if st.exitstatus == 1
    counts[:refused] += 1
    refused << [expr, want, err.lines.first.to_s.chomp]
  elsif st.exitstatus == 0 && out.b == want.b
    counts[:same] += 1
  elsif st.exitstatus == 0
    counts[:silent] += 1
    silent << [expr, want, out]
  else
    counts[:crash] += 1
    silent << [expr, want, "EXIT #{st.exitstatus}: #{err.lines.first}"]
  end
end

silent.first(show).each { |e, w, o| puts "SILENT #{e}\n   ruby: #{w[0, 200]}\n   tpl : #{o[0, 200]}" }
refused.each { |e, w, o| puts "REFUSED #{e}\n   ruby: #{w[0, 200]}\n   tpl : #{o[0, 200]}" } if list_refused
puts "seed #{seed}: #{counts[:same]} same, #{counts[:refused]} refused, #{counts[:silent]} silent, " \
     "#{counts[:crash]} crash, #{counts[:skipped]} skipped"
exit(counts[:silent] + counts[:crash] > 0 ? 1 : 0)
