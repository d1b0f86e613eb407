# (RUBYLIB=REPO/build/ruby:REPO/ruby/lib)
# Greedy reducer for an erbfuzz finding: ruby erbreduce.rb FILE.txt
require "erb"
require "json"
require_relative "erb_runners"

def kind(src)
  a = run_erb(src); b = run_tpl(src)
  return (a == b ? nil : "different") if a.is_a?(String) && b.is_a?(String)
  return "tpl:#{b[1]}" if a.is_a?(String)
  return "ruby:#{a.is_a?(Array) ? a[1] : a.class}" if b.is_a?(String)
  nil
end

def segs(src) = src.split(/(<%.*?%>)/m).reject(&:empty?)
OPENER = /\A<%-?\s*(if|unless|while|until|case)\b|\bdo\s*(\|[^|]*\|)?\s*-?%>\z/
ENDT = /\A<%-?\s*end\s*-?%>\z/

def ranges(sg)
  out = []
  sg.each_with_index do |s, i|
    next unless s =~ OPENER
    d = 0
    (i...sg.size).each do |j|
      d += 1 if sg[j] =~ OPENER
      d -= 1 if sg[j] =~ ENDT
      if d.zero? then out << [i, j]; break end
    end
  end
  out
end

d = JSON.parse(File.read(ARGV[0]))
src = d["src"]
want = kind(src)
puts "kind: #{want.inspect}"
loop do
  sg = segs(src)
  cands = []
  ranges(sg).each { |i, j| cands << sg[0...i] + sg[j + 1..]; cands << sg[0...i] + sg[i + 1...j] + sg[j + 1..] }
  sg.each_index { |i| cands << sg[0...i] + sg[i + 1..] }
  sg.each_index { |i| cands << sg[0...i] + [sg[i][0, sg[i].size / 2]] + sg[i + 1..] unless sg[i].start_with?("<%") }
  found = cands.map(&:join).sort_by(&:size).find { |c| c.size < src.size && kind(c) == want }
  break unless found
  src = found
end
puts src.inspect
puts " ruby: #{run_erb(src).inspect}\n tpl:  #{run_tpl(src).inspect}"
