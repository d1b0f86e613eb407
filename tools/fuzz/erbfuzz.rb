# Differential fuzzer for ERB structure and trim mode "-": random templates of text (spaces, tabs,
# newlines), <% %> / <%- -%> / <%= %> / <%# %> / <%% tags, if/unless/else, each/times/map blocks, while,
# case/when, locals assigned in and out of blocks, string interpolation; rendered by Ruby's ERB and by
# Tpl::ERB in one process.
# Usage: RUBYLIB=REPO/build/ruby:REPO/ruby/lib ruby erbfuzz.rb N SEED [OUTDIR]
require "erb"
require "json"
require "fileutils"
require_relative "erb_runners"

N = Integer(ARGV[0]); SEED = Integer(ARGV[1]); OUT = ARGV[2] || "/tmp/erbfuzz"
FileUtils.mkdir_p(OUT)
R = Random.new(SEED)

def pick(a) = a[R.rand(a.size)]
def ws = Array.new(R.rand(4)) { pick([" ", "  ", "\t", "\n", "x", "", "\n\n", " \n", "\n "]) }.join
def lo = pick(["<%", "<%", "<%-"])
def lc = pick(["%>", "%>", "-%>"])
def var = pick(%w[x y z i acc s n])
def atom
  pick([-> { var }, -> { R.rand(-2..5).to_s }, -> { pick(['"a"', '"b c"', "''", '"#{x}"']) }, -> { "[1, 2]" },
        -> { "nil" }, -> { "@v" }, -> { "(#{var} || 0)" }, -> { "x.to_s" }, -> { "s.size" }]).call
end
def expr
  e = atom
  case R.rand(6)
  when 0 then "#{e}.to_s + #{atom}.to_s"
  when 1 then "#{e}.inspect"
  else e
  end
end

def gen(d = 0)
  out = +""
  R.rand(1..5).times do
    out << ws
    c = R.rand
    if c < 0.25 then out << "#{pick(['<%=', '<%-='.sub('-=', '=')])} #{expr} #{lc}"
    elsif c < 0.33 then out << "#{lo}# c #{lc}"
    elsif c < 0.38 then out << "<%% x %>"
    elsif c < 0.5 then out << "#{lo} #{var} = #{expr} #{lc}"
    elsif c < 0.62 && d < 3
      out << "#{lo} if #{pick([var, "!#{var}", 'true', "#{var}.nil?"])} #{lc}" << gen(d + 1)
      out << "#{lo} else #{lc}" << gen(d + 1) if R.rand < 0.4
      out << "#{lo} end #{lc}"
    elsif c < 0.74 && d < 3
      blk = pick(["[1, 2].each do |i|", "2.times do |i|", "[3].each_with_index do |n, i|", "{a: 1}.each do |k, v|"])
      out << "#{lo} #{blk} #{lc}" << gen(d + 1) << "#{lo} end #{lc}"
    elsif c < 0.8 && d < 3
      out << "#{lo} #{pick(['unless x', 'while false', 'until true'])} #{lc}" << gen(d + 1) << "#{lo} end #{lc}"
    elsif c < 0.86 && d < 3
      out << "#{lo} case #{var} when 1 #{lc}" << gen(d + 1) << "#{lo} when nil #{lc}" << gen(d + 1) << "#{lo} end #{lc}"
    elsif c < 0.9
      out << "<%= [1, 2].map { |q| q * 2 }.join(',') #{lc}"
    else out << ws
    end
  end
  out << ws
end

class Ctx
  def initialize(h) = h.each { |k, v| instance_variable_set("@#{k}", v) }
  def b = binding
end

counts = Hash.new(0)
N.times do |k|
  src = gen
  a = run_erb(src)
  b = run_tpl(src)
  kind = if a.is_a?(String) && b.is_a?(String) then (a == b ? "same" : "different")
         elsif !a.is_a?(String) && !b.is_a?(String) then "both-error"
         elsif a.is_a?(String) then "tpl-only-error"
         else "ruby-only-error"
         end
  counts[kind] += 1
  next if %w[same both-error].include?(kind)
  File.write(File.join(OUT, "#{kind}-#{SEED}-#{k}.txt"), JSON.pretty_generate({ src: src, ruby: a, tpl: b }))
end
p counts
