# Regular expressions in Tpl::ERB views run inside a Ruby process, whose libruby exports Onigmo's
# onig_* under Oniguruma's names: tpl must use libonig's own functions (issue 20; before, =~ was
# nil, match? false and sub crashed). Each output byte-equal to Ruby's ERB.
require "minitest/autorun"
require "erb"
require "tpl"

class TestRegex < Minitest::Test
  VIEWS = {
    "match_op" => "<%= %q(ab) =~ /b/ %>|<%= %q(xyz).match?(/y/) %>|<%= %q(xyz) =~ /q/ %>|<%= %q(abc) !~ /z/ %>",
    "sub" => "<%= %q(ab).sub(/b/, %q(c)) %>|<%= %q(a-b-c).gsub(/-/, %q(+)) %>|<%= %q(hello).gsub(/l/) { |m| m.upcase } %>",
    "sub_groups" => "<%= %q(John Smith).sub(/(\\w+) (\\w+)/, '\\2, \\1') %>|<%= %q(2024-01-02).gsub(/(\\d+)/) { $1.to_i * 2 } %>",
    "scan" => "<%= %q(a1b22c333).scan(/\\d+/).inspect %>|<%= %q(k=v; x=y).scan(/(\\w)=(\\w)/).inspect %>",
    "split" => "<%= %q(a, b,c ,d).split(/\\s*,\\s*/).inspect %>|<%= %q(one  two).split(/ +/).join(%q(|)) %>",
    "named" => "<% if (m = %q(Ann Lee 1990).match(/(?<first>\\w+) (?<last>\\w+) (?<year>\\d+)/)) %><%= m[:last] %>,<%= m[\"year\"] %>,<%= m.pre_match.inspect %><% end %>",
    "dollar" => "<% if %q(call at 9:30) =~ /(\\d+):(\\d+)/ %><%= $1 %>h<%= $2 %>|<%= $~[0] %>|<%= $~.pre_match %><% end %>",
    "unicode" => "<%= %q(café Ünïcode) =~ /Ü/ %>|<%= %q(naïve).sub(/ï/, %q(i)) %>|<%= %q(día-años).scan(/\\p{L}+/).inspect %>",
    "options" => "<%= %q(HeLLo) =~ /hello/i %>|<%= %q(a\nb).match?(/a.b/m) %>|<%= %q(abc)[/b./] %>",
    "string_pattern" => "<%= %q(a.b.c).gsub(%q(.), %q(-)) %>|<%= %q(a.b).sub(%q(.)) { $~[0] * 2 } %>",
  }.freeze

  VIEWS.each do |name, src|
    define_method("test_#{name}") do
      want = ERB.new(src).result(binding)
      assert_equal want, Tpl::ERB.new(src).result(binding), src
    end
  end

  def test_invalid_regex_is_an_error
    assert_raises(StandardError, SyntaxError) { Tpl::ERB.new("<%= %q(a) =~ /(/ %>").result(binding) }
  end

  def test_threads
    src = VIEWS.values.join("\n")
    want = ERB.new(src).result(binding)
    threads = 4.times.map { Thread.new { 100.times.all? { Tpl::ERB.new(src).result(binding) == want } } }
    threads.each { |t| assert t.value }
  end
end
