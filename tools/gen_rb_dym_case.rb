# Writes tests/cases/erb-lang29/dym-classes.erb: misspellings of each class's method names (dropped,
# swapped, doubled or changed letters, seeded) whose NoMethodError's did_you_mean lines the oracle gives
# (the .out), so that stdlib/ruby/dym_methods.h's rows (own names + a shared suffix) are checked to spell
# against the lists Ruby does. usage: ruby tools/gen_rb_dym_case.rb [SEED [PER_CLASS]] > FILE.erb
vals = { "Integer" => "1", "Float" => "1.5", "String" => '"s"', "Symbol" => ":s", "Array" => "[1]", "Hash" => "{}",
  "Range" => "(1..2)", "TrueClass" => "true", "FalseClass" => "false", "Regexp" => "/a/", "MatchData" => '"a".match(/a/)',
  "Rational" => "1r", "Enumerator" => "[1].each", "Enumerator::ArithmeticSequence" => "1.step(3)" }
%w[KeyError NoMethodError NameError FrozenError RuntimeError StopIteration IndexError RangeError ArgumentError TypeError ZeroDivisionError LocalJumpError].each { |c| vals[c] = "(raise #{c}, 'm' rescue $!)" }
rng = Random.new(Integer(ARGV[0] || 54))
per = Integer(ARGV[1] || 10)
out = ["<%#- did_you_mean over each class's whole method list (dym_methods.h: own names + the shared Object/Exception suffix) -%>\n",
       "<%- def msg; yield.inspect; rescue NoMethodError => e; e.message.lines.drop(1).join.inspect; end -%>\n"]
vals.each do |c, v|
  x = eval(v)
  all = (x.methods + x.singleton_methods).uniq.map(&:to_s)
  words = all.grep(/\A[a-z_][a-zA-Z0-9_]*[?!]?\z/)
  seen = {}
  picks = []
  while picks.size < per
    w = words[rng.rand(words.size)]
    core = w.sub(/[?!]\z/, ""); suf = w[core.size..]
    next if core.size < 3
    i = rng.rand(core.size)
    m = case rng.rand(4)
        when 0 then core[0, i] + core[i + 1..]
        when 1 then i + 1 < core.size ? core[0, i] + core[i + 1] + core[i] + core[i + 2..] : core + "x"
        when 2 then core[0, i] + core[i] + core[i..]
        else core[0, i] + "e" + core[i + 1..]
        end
    m += suf
    next unless m =~ /\A[a-z_][a-zA-Z0-9_]*[?!]?\z/ && !all.include?(m) && !x.private_methods.include?(m.to_sym) && !seen[m]
    next if %w[then do end if in or and not].include?(m)
    seen[m] = true
    picks << m
  end
  out << "#{c}: " + picks.map { |m| "<%= msg { #{v}.#{m} } %>" }.join(" ") + "\n"
end
print out.join
# private methods: "private method `x' called for" (Object's private names less those the class makes public)
print "<%- def pm; yield.inspect; rescue NoMethodError => e; e.message[/\\A\\w+ method/]; end -%>\n"
vals.each do |c, v|
  print "#{c}: " + %w[puts format singleton_method_removed initialize respond_to_missing? initialize_copy sleep Integer].map { |m| "<%= pm { #{v}.#{m} } %>" }.join(" ") + "\n"
end
