/* Behaviour tests for ERB views: the Ruby methods of stdlib/ruby/ruby.c, Ruby operators and the Ruby
 * subset of grammar/erb_parse.y, through the public API.
 *
 * Each case renders an ERB template against a JSON state. `expect` is what Ruby 3.1's ERB
 * (trim_mode "-") printed for the same template and state, through the conformance oracle
 * (../shared/conformance/oracle, which applies tpl's documented deviations); a case whose
 * `expect` is NULL must fail, and `msg` is then a fragment found both in Ruby's error message
 * and in tpl's. Cases where tpl deliberately differs (64-bit integers, symbols equal to strings
 * in literal hashes, constructs tpl refuses) are left out.
 *
 * `test_erb --json` prints the cases as JSON lines; tests/erb_oracle_check.py renders each with
 * the oracle and reports any case whose expectation is not Ruby's:
 *
 *   python3 tests/erb_oracle_check.py build/tests/test_erb
 *
 * Standalone: prints "N passed, N failed", exits 1 on a failure. */
#include "tpl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct ecase {
    const char *tpl;
    const char *state;      /* JSON object */
    const char *expect;     /* NULL: the render (or compilation) must fail */
    const char *msg;        /* with expect NULL: a fragment of the error message */
} ecase;

static const ecase cases[] = {
    /* BEGIN CASES */
    /* ---- equality */
    {"<%= [1, [2, 3]] == [1, [2, 3]] %> <%= [1, [2, 3]] == [1, [2, 4]] %> <%= {\"a\" => 1} == {\"a\" => 1} %> <%= {\"a\" => 1} == {\"a\" => 2} %> <%= {\"a\" => 1} == {\"b\" => 1} %> <%= {\"a\" => 1} == {\"a\" => 1, \"b\" => 2} %> <%= [1] == [1.0] %> <%= nil == false %>",
     "{}", "true false true false false false true false", NULL},
    {"<%= 1.5 <=> 2 %> <%= [1, 2] <=> [1, 3] %> <%= [1, 2] <=> [1, 2, 3] %> <%= [1, 2] <=> [1, 2] %> <%= (\"a\" <=> 1).inspect %> <%= ((0.0 / 0.0) <=> 1.0).inspect %> <%= (nil <=> nil).inspect %>",
     "{}", "-1 -1 -1 0 nil nil 0", NULL},
    {"<%= [3, \"a\"].sort %>",
     "{}", NULL, "failed (ArgumentError)"},
    {"<%= [3, nil].max %>",
     "{}", NULL, "failed (ArgumentError)"},
    {"<%= 1.between\?(0, 2) %> <%= 5.between\?(0, 2) %> <%= 1.5.between\?(1, 2) %>",
     "{}", "true false true", NULL},
    {"<%= 1.between\?(nil, 2) %>",
     "{}", NULL, "comparison of Integer with nil failed (ArgumentError)"},
    {"<%= 1.between\?(0, nil) %>",
     "{}", NULL, "comparison of Integer with nil failed (ArgumentError)"},
    {"<%= 1 < 2 %> <%= 2 <= 2 %> <%= 3 >= 4 %> <%= \"a\" < \"b\" %> <%= 1.5 >= 1 %> <%= 2 > 1.5 %>",
     "{}", "true true false true true true", NULL},
    {"<%= 1 < \"a\" %>",
     "{}", NULL, "comparison of Integer with String failed (ArgumentError)"},
    {"<%= 1 <= nil %>",
     "{}", NULL, "comparison of Integer with nil failed (ArgumentError)"},
    {"<%= [1] < [2] %>",
     "{}", NULL, "undefined method `<' for [1]:Array (NoMethodError)"},
    {"<%= (\"abc\" =~ 5).inspect %> <%= (5 =~ /x/).inspect %>",
     "{}", "nil nil", NULL},
    {"<%= [1, 2].fetch(5) %>",
     "{}", NULL, "index 5 outside of array bounds: -2...2 (IndexError)"},
    {"<%= [].fetch(0) %>",
     "{}", NULL, "index 0 outside of array bounds: 0...0 (IndexError)"},
    {"<%= [1, 2].to_h %>",
     "{}", NULL, "wrong element type Integer at 0 (expected array) (TypeError)"},
    {"<%= [[1]].to_h %>",
     "{}", NULL, "wrong array length at 0 (expected 2, was 1) (ArgumentError)"},
    {"<%= \"abc\".scan(5) %>",
     "{}", NULL, "wrong argument type Integer (expected Regexp) (TypeError)"},
    {"<%= \"abc\".match\?(nil) %>",
     "{}", NULL, "wrong argument type nil (expected Regexp) (TypeError)"},
    {"<%= \"x\".gsub(5, \"a\") %>",
     "{}", NULL, "wrong argument type Integer (expected Regexp) (TypeError)"},
    {"<%= \"x\".sub(nil, \"a\") %>",
     "{}", NULL, "wrong argument type nil (expected Regexp) (TypeError)"},
    {"<%= \"x\".split(5) %>",
     "{}", NULL, "wrong argument type Integer (expected Regexp) (TypeError)"},
    {"<%= \"abc\" =~ \"b\" %>",
     "{}", NULL, "type mismatch: String given (TypeError)"},
    {"<%= \"hello\"[nil] %>",
     "{}", NULL, "no implicit conversion from nil to integer (TypeError)"},
    {"<%= [1][nil] %>",
     "{}", NULL, "no implicit conversion from nil to integer (TypeError)"},
    {"<%= [1].first(true) %>",
     "{}", NULL, "no implicit conversion of true into Integer (TypeError)"},
    {"<%= \"a\" + nil %>",
     "{}", NULL, "no implicit conversion of nil into String (TypeError)"},
    {"<%= \"a\".center(3, nil) %>",
     "{}", NULL, "no implicit conversion of nil into String (TypeError)"},
    {"<%= \"a\" < 1 %>",
     "{}", NULL, "comparison of String with 1 failed (ArgumentError)"},
    {"<%= 1 < [1] %>",
     "{}", NULL, "comparison of Integer with Array failed (ArgumentError)"},
    {"<%= 1.5 < {} %>",
     "{}", NULL, "comparison of Float with Hash failed (ArgumentError)"},
    {"<%= \"a\" < nil %>",
     "{}", NULL, "comparison of String with nil failed (ArgumentError)"},
    {"<%= 1 < true %>",
     "{}", NULL, "comparison of Integer with true failed (ArgumentError)"},
    {"<%= \"a\" > 2.5 %>",
     "{}", NULL, "comparison of String with 2.5 failed (ArgumentError)"},
    {"<%= 1.between\?(\"a\", 2) %>",
     "{}", NULL, "comparison of Integer with String failed (ArgumentError)"},
    {"<%= \"x\".start_with\?(5) %>",
     "{}", NULL, "no implicit conversion of Integer into String (TypeError)"},
    {"<%= \"abc\".center(5, \"\") %>",
     "{}", NULL, "zero width padding (ArgumentError)"},
    {"<%= [1, 2].sort { |a, b| nil } %>",
     "{}", NULL, "comparison of Integer with 2 failed (ArgumentError)"},
    {"<%= [3, \"a\"].sort %>",
     "{}", NULL, "comparison of Integer with String failed (ArgumentError)"},
    {"<%= [3, \"a\"].sort_by { |x| x } %>",
     "{}", NULL, "comparison of Integer with String failed (ArgumentError)"},
    {"<%= [[2, \"b\"], [1, \"a\"], [2, \"a\"]].sort.inspect %> <%= [3, 1, 2, 1].sort { |a, b| b <=> a }.inspect %> <%= %w[bb a ccc dd].sort_by(&:size).inspect %> <%= [0.5, -1, 3].sort.inspect %>",
     "{}", "[[1, \"a\"], [2, \"a\"], [2, \"b\"]] [3, 2, 1, 1] [\"a\", \"bb\", \"dd\", \"ccc\"] [-1, 0.5, 3]", NULL},
    /* ---- kernel */
    {"<%= Integer(\"42\") %> <%= Integer(3.9) %> <%= Integer(-3.9) %> <%= Integer(7) %> <%= Integer(\"ff\", 16) %> <%= Integer(\" 12 \") %> <%= Integer(\"1_000\") %> <%= Integer(\"0x1f\", 16) %>",
     "{}", "42 3 -3 7 255 12 1000 31", NULL},
    {"<%= Integer(\"12abc\") %>",
     "{}", NULL, "invalid value for Integer(): \"12abc\" (ArgumentError)"},
    {"<%= Integer(\"\") %>",
     "{}", NULL, "invalid value for Integer(): \"\" (ArgumentError)"},
    {"<%= Float(3) %> <%= Float(\"2.5\") %> <%= Float(\"1e3\") %> <%= Float(\" 1.5 \") %> <%= Float(2.5) %> <%= Float(\"-1_000.5\") %>",
     "{}", "3.0 2.5 1000.0 1.5 2.5 -1000.5", NULL},
    {"<%= Float(\"x\") %>",
     "{}", NULL, "invalid value for Float(): \"x\" (ArgumentError)"},
    {"<%= Float(\"1.5e\") %>",
     "{}", NULL, "invalid value for Float(): \"1.5e\" (ArgumentError)"},
    {"<%= String(12) %> <%= String(nil).inspect %> <%= String([1, 2]) %> <%= String(1.5) %>",
     "{}", "12 \"\" [1, 2] 1.5", NULL},
    {"<%= Array({\"a\" => 1}).inspect %> <%= Array(1..3).inspect %> <%= Array(nil).inspect %> <%= Array([1]).inspect %> <%= Array(\"x\").inspect %>",
     "{}", "[[\"a\", 1]] [1, 2, 3] [] [1] [\"x\"]", NULL},
    {"<%= [1, \"a\"].is_a\?(Enumerable) %> <%= {}.is_a\?(Enumerable) %> <%= 1.is_a\?(Enumerable) %> <%= 1.5.is_a\?(Float) %> <%= 1.5.is_a\?(Numeric) %> <%= 1.kind_of\?(Integer) %> <%= \"a\".instance_of\?(String) %> <%= nil.is_a\?(NilClass) %>",
     "{}", "true true false true true true true true", NULL},
    {"<%= 1.is_a\?(5) %>",
     "{}", NULL, "class or module required (TypeError)"},
    {"<%= (1..3) === 2 %> <%= Integer === 3 %> <%= String === 3 %> <%= /b/ === \"abc\" %> <%= /z/ === \"abc\" %> <%= /b/ === 5 %> <%= 3 === 3 %> <%= \"a\" === \"a\" %>",
     "{}", "true true false true false false true true", NULL},
    {"<%= \"abc\" =~ /c/ %> <%= (\"abc\" =~ /z/).inspect %> <%= (nil =~ /z/).inspect %>",
     "{}", "2 nil nil", NULL},
    {"<%= \"abc\".frozen\? %> <%= 1.dup %> <%= \"x\".clone %> <%= [1].freeze.inspect %> <%= 2.itself %> <%= nil.to_a.inspect %> <%= nil.to_i %> <%= nil.to_f %> <%= nil.to_s.inspect %> <%= 1.eql\?(1) %> <%= 1.eql\?(1.0) %>",
     "{}", "false 1 x [1] 2 [] 0 0.0 \"\" true false", NULL},
    {"<%= 5.to_a %>",
     "{}", NULL, "undefined method `to_a' for 5:Integer (NoMethodError)"},
    {"<%= [1].to_i %>",
     "{}", NULL, "undefined method `to_i' for [1]:Array (NoMethodError)"},
    {"<%= [1].to_f %>",
     "{}", NULL, "undefined method `to_f' for [1]:Array (NoMethodError)"},
    {"<%= nil.foo %>",
     "{}", NULL, "undefined method `foo' for nil:NilClass (NoMethodError)"},
    {"<%= 1.5.odd\? %>",
     "{}", NULL, "undefined method `odd\?' for 1.5:Float (NoMethodError)"},
    {"<%= (1..3)[0] %>",
     "{}", NULL, "undefined method `[]' for 1..3:Range (NoMethodError)"},
    {"<%= true.upcase %>",
     "{}", NULL, "undefined method `upcase' for true:TrueClass (NoMethodError)"},
    {"<%= {\"a\" => 1}.upcase %>",
     "{}", NULL, "undefined method `upcase' for {\"a\"=>1}:Hash (NoMethodError)"},
    {"<%= Integer(\"010\") %> <%= Integer(\"0x1f\") %> <%= Integer(\"-0b101\") %> <%= Integer(\"0o17\") %> <%= Integer(\"0d19\") %> <%= Integer(\"0_10\") %> <%= Integer(\" 0x1F\\n\") %> <%= Integer(\"0x1f\", 16) %> <%= Integer(\"0\", 0) %> <%= Integer(\"+0\") %> <%= Integer(\"0b11\", 0) %>",
     "{}", "8 31 -5 15 19 8 31 31 0 0 3", NULL},
    {"<%= \"0x1A\".to_i(0) %> <%= \"010\".to_i(0) %> <%= \"010\".to_i %> <%= \"0b11\".to_i(2) %> <%= \"0o17\".to_i(8) %> <%= \"0d9\".to_i(10) %> <%= \"0x1A\".to_i %>",
     "{}", "26 8 10 3 15 9 0", NULL},
    {"<%= Integer(\"08\") %>",
     "{}", NULL, "invalid value for Integer(): \"08\" (ArgumentError)"},
    {"<%= Integer(\"0x\") %>",
     "{}", NULL, "invalid value for Integer(): \"0x\" (ArgumentError)"},
    {"<%= Integer(\"0x1f\", 10) %>",
     "{}", NULL, "invalid value for Integer(): \"0x1f\" (ArgumentError)"},
    {"<%= Integer(nil) %>",
     "{}", NULL, "can't convert nil into Integer (TypeError)"},
    {"<%= Integer(true) %>",
     "{}", NULL, "can't convert true into Integer (TypeError)"},
    {"<%= Integer([1]) %>",
     "{}", NULL, "can't convert Array into Integer (TypeError)"},
    {"<%= Float(nil) %>",
     "{}", NULL, "can't convert nil into Float (TypeError)"},
    {"<%= Float({}) %>",
     "{}", NULL, "can't convert Hash into Float (TypeError)"},
    {"<%= Integer(0.0 / 0.0) %>",
     "{}", NULL, "NaN (FloatDomainError)"},
    {"<%= (1.0 / 0).to_i %>",
     "{}", NULL, "Infinity (FloatDomainError)"},
    {"<%= (-1.0 / 0).truncate %>",
     "{}", NULL, "-Infinity (FloatDomainError)"},
    {"<%= \".5\".to_f %> <%= \"-.5\".to_f %> <%= \"5.\".to_f %> <%= Float(\".5\") %> <%= Float(\"-.25e1\") %> <%= \".\".to_f %>",
     "{}", "0.5 -0.5 5.0 0.5 -2.5 0.0", NULL},
    {"<%= Float(\"5.\") %>",
     "{}", NULL, "invalid value for Float(): \"5.\" (ArgumentError)"},
    /* ---- string */
    {"<%= \"a\\r\\n\".chomp.inspect %> <%= \"a\\n\".chomp.inspect %> <%= \"a\\r\".chomp.inspect %> <%= \"a\\n\\n\".chomp.inspect %> <%= \"a\".chomp.inspect %> <%= \"\".chomp.inspect %> <%= \"\\r\\n\".chomp.inspect %>",
     "{}", "\"a\" \"a\" \"a\" \"a\\n\" \"a\" \"\" \"\"", NULL},
    {"<%= \"abc\".start_with\?(/a./) %> <%= \"abc\".start_with\?(/b/) %> <%= \"abc\".start_with\?(\"x\", /ab/) %> <%= \"abc\".start_with\?(\"x\", \"y\") %> <%= \"abc\".end_with\?(\"bc\") %>",
     "{}", "true false true false true", NULL},
    {"<%= \"hello world\".gsub(/o/) { |m| m.upcase } %> <%= \"hello\".sub(/l/) { |m| \"L\" } %> <%= \"abc\".gsub(/(b)/, '[\\1]') %> <%= \"abc\".gsub(/b/, '<\\0>') %> <%= \"abc\".gsub(/b/, '\\\\\\\\') %> <%= \"abc\".sub(/b/, '\\&\\&') %> <%= \"abc\".sub(/(x)\?b/, '[\\1]') %> <%= \"abc\".gsub(/b/, '\\k') %>",
     "{}", "hellO wOrld heLlo a[b]c a<b>c a\\c abbc a[]c a\\kc", NULL},
    {"<%= \"h\303\251llo\".gsub(//, \"-\") %> <%= \"abc\".gsub(/x*/, \"-\") %> <%= \"aaa\".gsub(/a/) { |m| m.ord.to_s } %> <%= \"a.b\".gsub(\".\", \"!\") %> <%= \"abcabc\".sub(\"b\", \"B\") %>",
     "{}", "-h-\303\251-l-l-o- -a-b-c- 979797 a!b aBcabc", NULL},
    {"<%= \"a-b-c\".gsub(/-/) { |m| break \"stop\" } %>",
     "{}", "stop", NULL},
    {"<%= \"a1b22c333\".scan(/\\d+/).inspect %> <%= \"a1b2\".scan(/([a-z])(\\d)/).inspect %> <%= \"aaa\".scan(\"a\").inspect %> <%= \"abab\".scan(\"ab\").inspect %> <%= \"h\303\251\303\251\".scan(//).inspect %> <%= \"ab\".scan(/(x)\?b/).inspect %> <%= \"xyz\".scan(/q/).inspect %>",
     "{}", "[\"1\", \"22\", \"333\"] [[\"a\", \"1\"], [\"b\", \"2\"]] [\"a\", \"a\", \"a\"] [\"ab\", \"ab\"] [\"\", \"\", \"\", \"\"] [[nil]] []", NULL},
    {"<%= \"abc\".gsub(/(/, \"x\") %>",
     "{}", NULL, "end pattern with unmatched parenthesis"},
    {"<%= \"abc\".match\?(/b/) %> <%= \"abc\".match\?(\"c\") %> <%= \"abc\".match\?(/z/) %> <%= \"abc\".match\?(\"z\") %>",
     "{}", "true true false false", NULL},
    {"<%= \"a,b;c\".split(/[,;]/).inspect %> <%= \"abc\".split(//).inspect %> <%= \"a  b\".split(/ /).inspect %> <%= \"h\303\251llo\".split(//).inspect %> <%= \",a,,b,,\".split(/,/).inspect %> <%= \"a1b2c\".split(/\\d/).inspect %> <%= \"abc\".split(/x*/).inspect %> <%= \"\".split(/,/).inspect %> <%= \" a b \".split.inspect %> <%= \"a,b\".split(\",\").inspect %>",
     "{}", "[\"a\", \"b\", \"c\"] [\"a\", \"b\", \"c\"] [\"a\", \"\", \"b\"] [\"h\", \"\303\251\", \"l\", \"l\", \"o\"] [\"\", \"a\", \"\", \"b\"] [\"a\", \"b\", \"c\"] [\"a\", \"b\", \"c\"] [] [\"a\", \"b\"] [\"a\", \"b\"]", NULL},
    {"<%= \"12\".to_i %> <%= \"0x1A\".to_i(16) %> <%= \"1A\".to_i(16) %> <%= \"z\".to_i(36) %> <%= \"  42abc\".to_i %> <%= \"-12\".to_i %> <%= \"abc\".to_i %> <%= \"1_000\".to_i %> <%= \"0b11\".to_i(2) %> <%= \"-0x1A\".to_i(16) %> <%= \"0x\".to_i(16) %>",
     "{}", "12 26 26 35 42 -12 0 1000 3 -26 0", NULL},
    {"<%= \"12\".to_i(1) %>",
     "{}", NULL, "invalid radix 1 (ArgumentError)"},
    {"<%= \"1.5e3\".to_f %> <%= \"1.5x\".to_f %> <%= \"abc\".to_f %> <%= \"1e\".to_f %> <%= \"-2.5e-2\".to_f %> <%= \"1_0.5\".to_f %> <%= \"1.e5\".to_f %> <%= \" 2.5 \".to_f %>",
     "{}", "1500.0 1.5 0.0 1.0 -0.025 10.5 1.0 2.5", NULL},
    {"<%= \"abc\".to_sym %> <%= \"abc\".intern.inspect %> <%= \"abc\".to_sym.inspect %> <%= \"abc\".to_str %> <%= :abc.to_s %>",
     "{}", "abc :abc :abc abc abc", NULL},
    {"<%= \"hello\"[1..3] %> <%= \"hello\"[-3, 2] %> <%= \"hello\"[/l+/] %> <%= \"hello\"[/z/].inspect %> <%= \"hello\"[\"ell\"] %> <%= \"hello\"[\"z\"].inspect %> <%= \"hello\"[10].inspect %> <%= \"hello\"[-2..] %> <%= \"hello\"[1] %> <%= \"hello\".slice(0, 2) %> <%= \"h\303\251llo\"[1, 2] %> <%= \"hello\"[5, 1].inspect %> <%= \"hello\"[6, 1].inspect %>",
     "{}", "ell ll ll nil ell nil nil lo e he \303\251l \"\" nil", NULL},
    {"<%= \"hello\"[nil] %>",
     "{}", NULL, "no implicit conversion"},
    {"<%= \"hello\"[0, \"a\"] %>",
     "{}", NULL, "no implicit conversion of String into Integer (TypeError)"},
    {"<%= \"h\303\251llo\".chars.inspect %> <%= \"ab\".each_char.to_a.inspect %> <%= \"a\\nb\".lines.inspect %> <%= \"\".lines.inspect %> <%= \"a\\n\\nb\\n\".lines.inspect %>",
     "{}", "[\"h\", \"\303\251\", \"l\", \"l\", \"o\"] [\"a\", \"b\"] [\"a\\n\", \"b\"] [] [\"a\\n\", \"\\n\", \"b\\n\"]", NULL},
    {"<%= \"a\" + \"b\" %> <%= \"a\".concat(\"c\") %> <%= \"ab\" * 3 %> <%= \"a\".ord %> <%= \"\303\251\".ord %>",
     "{}", "ab ac ababab 97 233", NULL},
    {"<%= \"a\" + 1 %>",
     "{}", NULL, "no implicit conversion of Integer into String (TypeError)"},
    {"<%= \"\".ord %>",
     "{}", NULL, "empty string (ArgumentError)"},
    {"<%= \"a\" * \"b\" %>",
     "{}", NULL, "no implicit conversion of String into Integer (TypeError)"},
    {"<%= \"a\" * -1 %>",
     "{}", NULL, "negative argument (ArgumentError)"},
    {"<%= \"Hello\".swapcase %> <%= \"hello world\".capitalize %> <%= \"  x \".lstrip.inspect %> <%= \"  x \".rstrip.inspect %> <%= \"abc\".reverse %> <%= \"ab\".center(6, \"*\") %> <%= \"ab\".ljust(5, \".\") %> <%= \"ab\".rjust(5) %> <%= \"abc\".include\?(\"bc\") %> <%= \"\".empty\? %> <%= \"h\303\251llo\".length %> <%= \"h\303\251llo\".size %>",
     "{}", "hELLO Hello world \"x \" \"  x\" cba **ab** ab...    ab true true 5 5", NULL},
    {"<%= (\"%.2f\" % 3.14159) %> <%= \"%s and %s\" % [\"a\", \"b\"] %> <%= \"%-5s|\" % \"ab\" %> <%= \"%x\" % 255 %> <%= \"%08.3f\" % -3.5 %> <%= \"%+d\" % 5 %>",
     "{}", "3.14 a and b ab   | ff -003.500 +5", NULL},
    {"<%= \"abc\".split(/(b)/).inspect %> <%= \"a1b2c\".split(/(\\d)/).inspect %> <%= \"a-b_c\".split(/(-)|(_)/).inspect %> <%= \"abc\".split(/(c)/).inspect %> <%= \"ab\".split(/()/).inspect %> <%= \"abc\".split(/(x)\?/).inspect %> <%= \"h\303\251llo\".split(/(l)/).inspect %> <%= \",a\".split(/(,)/).inspect %>",
     "{}", "[\"a\", \"b\", \"c\"] [\"a\", \"1\", \"b\", \"2\", \"c\"] [\"a\", \"-\", \"b\", \"_\", \"c\"] [\"ab\", \"c\"] [\"a\", \"\", \"b\"] [\"a\", \"b\", \"c\"] [\"h\303\251\", \"l\", \"\", \"l\", \"o\"] [\"\", \",\", \"a\"]", NULL},
    /* ---- number */
    {"<%= 2.5.round(half: :even) %> <%= 2.5.round(half: :up) %> <%= 25.round(-1, half: :even) %> <%= 1.25.round(1, half: :even) %> <%= 3.5.round(half: :even) %> <%= 15.round(-1) %> <%= 1.5.floor %> <%= -1.5.ceil %> <%= 1.234.floor(2) %> <%= 1.234.ceil(1) %>",
     "{}", "2 3 20 1.2 4 20 1 -1 1.23 1.3", NULL},
    {"<%= -5.abs %> <%= -2.5.abs %> <%= 3.abs %> <%= 7.fdiv(2) %> <%= 3.7.to_i %> <%= -3.7.truncate %> <%= 3.to_f %> <%= 255.to_s(16) %> <%= 5.to_s(2) %>",
     "{}", "5 2.5 3 3.5 3 -3 3.0 ff 101", NULL},
    {"<%= 7.divmod(2).inspect %> <%= -7.divmod(2).inspect %> <%= 7.divmod(-2).inspect %>",
     "{}", "[3, 1] [-4, 1] [-4, -1]", NULL},
    {"<%= 7.5.divmod(0) %>",
     "{}", NULL, "divided by 0 (ZeroDivisionError)"},
    {"<%= 7.divmod(0) %>",
     "{}", NULL, "divided by 0 (ZeroDivisionError)"},
    {"<%= 7 / 0 %>",
     "{}", NULL, "divided by 0 (ZeroDivisionError)"},
    {"<%= 7 % 0 %>",
     "{}", NULL, "divided by 0 (ZeroDivisionError)"},
    {"<%= 3.odd\? %> <%= 4.even\? %> <%= 0.zero\? %> <%= 0.0.zero\? %> <%= 1.5.positive\? %> <%= -1.negative\? %> <%= 0.negative\? %> <%= 0.positive\? %> <%= 1.integer\? %> <%= 1.0.integer\? %>",
     "{}", "true true true true true true false false true false", NULL},
    {"<% 3.times do |i| %><%= i %>,<% end %> <%= 3.times.to_a.inspect %> <%= 3.times.map { |i| i * 2 }.inspect %> <%= 0.times.to_a.inspect %> <%= 2.times { |i| i } %>",
     "{}", "0,1,2, [0, 1, 2] [0, 2, 4] [] 2", NULL},
    {"<%= 4.times { |i| break i * 100 if i == 2 } %>",
     "{}", "200", NULL},
    {"<%= 7.5 % 2 %> <%= -7.5 % 2 %> <%= 7.5 % -2 %> <%= 6.0 % 2 %> <%= 7 / 2.0 %> <%= 7 / 2 %> <%= -7 / 2 %> <%= -7 % 3 %> <%= 2 ** 10 %> <%= 2.0 ** -1 %>",
     "{}", "1.5 0.5 -0.5 0.0 3.5 3 -4 2 1024 0.5", NULL},
    {"<%= 1 + nil %>",
     "{}", NULL, "nil can't be coerced into Integer (TypeError)"},
    {"<%= 1 + \"a\" %>",
     "{}", NULL, "String can't be coerced into Integer (TypeError)"},
    {"<%= 1.5 * \"a\" %>",
     "{}", NULL, "String can't be coerced into Float (TypeError)"},
    {"<%= 1.5 - nil %>",
     "{}", NULL, "nil can't be coerced into Float (TypeError)"},
    {"<%= 25.5.round(-1, half: :even) %> <%= 15.5.round(-1, half: :down) %> <%= 15.5.round(-1) %> <%= 14.9.round(-1) %> <%= 25.5.round(-1) %> <%= 1.25.round(1, half: :down) %> <%= 1.35.round(1, half: :down) %> <%= 2.5.round(half: :down) %> <%= -2.5.round(half: :down) %> <%= -2.5.round(half: nil) %> <%= 25.round(-1, half: :down) %> <%= -25.round(-1, half: :down) %> <%= 2.675.round(2, half: :down) %> <%= 0.5.round(half: :down) %> <%= 2.5.round(half: \"even\") %>",
     "{}", "20 10 20 10 30 1.2 1.3 2 -2 -3 20 -20 2.67 0 2", NULL},
    {"<%= 15.5.floor(-1) %> <%= 15.5.ceil(-1) %> <%= -15.5.ceil(-1) %> <%= 10.5.ceil(-1) %> <%= -10.5.floor(-1) %> <%= 2.6.round(half: :down) %> <%= -2.6.round(half: :down) %> <%= 35.round(-1, half: :even) %> <%= -35.round(-1, half: :even) %>",
     "{}", "10 20 -10 20 -20 3 -3 40 -40", NULL},
    {"<%= 2.5.round(half: :sideways) %>",
     "{}", NULL, "invalid rounding mode: sideways (ArgumentError)"},
    {"<%= 2.5.round(half: 1) %>",
     "{}", NULL, "invalid rounding mode: 1 (ArgumentError)"},
    {"<%= 7.5.divmod(2).inspect %> <%= -7.5.divmod(2).inspect %> <%= 7.divmod(-2.0).inspect %> <%= 1.0.divmod(0.3).inspect %> <%= -0.0.divmod(1).inspect %> <%= 6.0.divmod(3).inspect %>",
     "{}", "[3, 1.5] [-4, 0.5] [-4, -1.0] [3, 0.10000000000000003] [0, -0.0] [2, 0.0]", NULL},
    {"<%= (0.0 / 0).divmod(1) %>",
     "{}", NULL, "NaN (FloatDomainError)"},
    {"<%= 7.0 % 0 %>",
     "{}", NULL, "divided by 0 (ZeroDivisionError)"},
    {"<%= 7 % 0.0 %>",
     "{}", NULL, "divided by 0 (ZeroDivisionError)"},
    {"<%= 7.0 / 0 %> <%= -7 / 0.0 %>",
     "{}", "Infinity -Infinity", NULL},
    /* ---- array */
    {"<%= [1, 2, 3, 4].count(&:even\?) %> <%= [1, 2, 2].count(2) %> <%= [1, 2, 3].count { |x| x > 1 } %> <%= [1, 2].count %> <%= {\"a\" => 1}.count %>",
     "{}", "2 2 2 2 1", NULL},
    {"<%= [1, 2, 3].all\? { |x| x > 0 } %> <%= [1, 2, 3].all\?(Integer) %> <%= [1, nil].all\? %> <%= [].all\? %> <%= [1, 2].none\? { |x| x > 2 } %> <%= [nil, false].none\? %> <%= [1, \"a\"].any\?(String) %> <%= [1, 5].any\?(2..4) %> <%= [\"ab\", \"c\"].all\?(/a/) %> <%= [1, 2].none\?(3) %> <%= [].any\? %>",
     "{}", "true true false true true true true false false true false", NULL},
    {"<%= [1, 2, 3].any\? { |x| break \"early\" if x == 2 } %>",
     "{}", "early", NULL},
    {"<%= [5, 6, 7].index(6) %> <%= [5, 6, 7].index { |x| x > 5 } %> <%= [5, 6].index(9).inspect %> <%= [5, 6, 7].find_index(7) %> <%= [5, 6].find_index { |x| x > 9 }.inspect %>",
     "{}", "1 1 nil 2 nil", NULL},
    {"<%= [3, 1, 2].sort_by { |x| -x }.inspect %> <%= [\"bb\", \"a\", \"ccc\"].sort_by(&:size).inspect %> <%= [\"b\", \"a\"].min_by { |s| s }.inspect %> <%= [1, 3, 2].max_by { |x| x }.inspect %> <%= [].min_by { |x| x }.inspect %> <%= [[2, \"b\"], [1, \"a\"]].sort.inspect %> <%= [3, 1, 2].sort { |a, b| b <=> a }.inspect %>",
     "{}", "[3, 2, 1] [\"a\", \"bb\", \"ccc\"] \"a\" 3 nil [[1, \"a\"], [2, \"b\"]] [3, 2, 1]", NULL},
    {"<%= [3, 1, 2].sort_by { |x| break x } %>",
     "{}", "3", NULL},
    {"<%= [1, 2.5, 3].sum %> <%= [0.1, 0.2, 0.3].sum %> <%= [\"a\", \"b\"].sum(\"\") %> <%= [[1], [2, 3]].sum([]).inspect %> <%= [1, 2].sum(0.0) %> <%= [0.1] * 3 %> <%= [1, 2].sum { |x| x * 2 } %> <%= [3.0, 1e100, -1e100].sum %>",
     "{}", "6.5 0.6 ab [1, 2, 3] 3.0 [0.1, 0.1, 0.1] 6 3.0", NULL},
    {"<%= [1, \"a\"].sum %>",
     "{}", NULL, "String can't be coerced into Integer (TypeError)"},
    {"<%= [[1, 2], [3]].flat_map { |x| x }.inspect %> <%= [1, 2].flat_map { |x| [x, x * 10] }.inspect %> <%= [1, 2].flat_map { |x| x }.inspect %> <%= [[1, [2]]].flat_map { |x| x }.inspect %>",
     "{}", "[1, 2, 3] [1, 10, 2, 20] [1, 2] [1, [2]]", NULL},
    {"<%= [1, 2, 3].find { |x| x > 1 } %> <%= [1, 2].detect { |x| x > 5 }.inspect %>",
     "{}", "2 nil", NULL},
    {"<%= [1, 2].each { |x| x }.inspect %> <%= [1, 2].each.to_a.inspect %> <%= [1, 2].each_with_index.to_a.inspect %> <%= [\"a\", \"b\"].each_with_index.map { |x, i| \"#{i}#{x}\" }.join(\",\") %> <%= [1, 2].each_with_index { |x, i| x }.inspect %>",
     "{}", "[1, 2] [1, 2] [[1, 0], [2, 1]] 0a,1b [1, 2]", NULL},
    {"<%= [1, 2, 3].each_with_index { |x, i| break i if x == 2 } %> <%= [1, 2, 3].each { |x| break x * 10 if x == 2 } %>",
     "{}", "1 20", NULL},
    {"<%= [1, 2, 3].inject { |s, x| s + x } %> <%= [1, 2, 3].inject(10) { |s, x| s + x } %> <%= [].inject { |s, x| s + x }.inspect %> <%= [1, 2, 3].reduce(1) { |s, x| s * x } %> <%= [5].inject { |s, x| s * 100 } %>",
     "{}", "6 16 nil 6 5", NULL},
    {"<%= [1, 2, 3].take(2).inspect %> <%= [1, 2, 3].drop(1).inspect %> <%= [1, 2, 3].drop(5).inspect %> <%= [1, 2].take(5).inspect %>",
     "{}", "[1, 2] [2, 3] [] [1, 2]", NULL},
    {"<%= [1, 2].drop(-1) %>",
     "{}", NULL, "attempt to drop negative size (ArgumentError)"},
    {"<%= [1, 2, 3][1, 5].inspect %> <%= [1, 2, 3][5, 1].inspect %> <%= [1, 2, 3][-2, 1].inspect %> <%= [1, 2, 3][1..].inspect %> <%= [1, 2, 3][3, 1].inspect %> <%= [1, 2, 3][-1] %> <%= [1, 2, 3].slice(0, 2).inspect %>",
     "{}", "[2, 3] nil [2] [2, 3] [] 3 [1, 2]", NULL},
    {"<%= [1, 2][\"a\"] %>",
     "{}", NULL, "no implicit conversion of String into Integer (TypeError)"},
    {"<%= [1, 2][0, \"a\"] %>",
     "{}", NULL, "no implicit conversion of String into Integer (TypeError)"},
    {"<%= [[1, [2]]].dig(0, 1, 0) %> <%= [{\"a\" => [5]}].dig(0, \"a\", 0) %> <%= [1].dig(5).inspect %> <%= {\"a\" => {\"b\" => 1}}.dig(\"a\", \"b\") %> <%= {\"a\" => nil}.dig(\"a\", \"b\").inspect %>",
     "{}", "2 5 nil 1 nil", NULL},
    {"<%= [1].dig(0, 1) %>",
     "{}", NULL, "Integer does not have #dig method (TypeError)"},
    {"<%= [1, 2].fetch(1) %> <%= [1, 2].fetch(-1) %> <%= [1, 2].fetch(5, \"d\") %> <%= [1, 2].fetch(5) { |i| i * 2 } %> <%= [1, 2].fetch(-5, 0) %>",
     "{}", "2 2 d 10 0", NULL},
    {"<%= [1, 2].fetch(\"a\") %>",
     "{}", NULL, "no implicit conversion of String into Integer (TypeError)"},
    {"<%= [[1, 2], [3, 4]].to_h.inspect %> <%= [1, 2].to_h { |x| [x, x * 2] }.inspect %> <%= [].to_h.inspect %>",
     "{}", "{1=>2, 3=>4} {1=>2, 2=>4} {}", NULL},
    {"<%= [1, 2, 3, 4].group_by(&:odd\?).inspect %> <%= [\"a\", \"bb\", \"c\"].group_by(&:size).inspect %> <%= [].group_by { |x| x }.inspect %>",
     "{}", "{true=>[1, 3], false=>[2, 4]} {1=>[\"a\", \"c\"], 2=>[\"bb\"]} {}", NULL},
    {"<%= [1, 2, 3, 4, 5].each_slice(2).to_a.inspect %> <% [1, 2, 3].each_slice(2) do |s| %><%= s.inspect %><% end %> <%= [1, 2].each_slice(5).to_a.inspect %> <%= [].each_slice(3).to_a.inspect %>",
     "{}", "[[1, 2], [3, 4], [5]] [1, 2][3] [[1, 2]] []", NULL},
    {"<%= [1].each_slice(0) %>",
     "{}", NULL, "invalid slice size (ArgumentError)"},
    {"<%= [3, 1, 2].minmax.inspect %> <%= [].minmax.inspect %> <%= [\"b\", \"c\", \"a\"].minmax.inspect %>",
     "{}", "[1, 3] [nil, nil] [\"a\", \"c\"]", NULL},
    {"<%= [1, 2, 3, 2] - [2] %> <%= ([1, [2]] - [[2]]).inspect %> <%= [1, 2] * \", \" %> <%= [1, [2, [3]]] * \"-\" %> <%= ([1] + [2]).inspect %> <%= ([1, 2] * 2).inspect %>",
     "{}", "[1, 3] [1] 1, 2 1-2-3 [1, 2] [1, 2, 1, 2]", NULL},
    {"<%= [1] + 1 %>",
     "{}", NULL, "no implicit conversion of Integer into Array (TypeError)"},
    {"<%= [1] - 1 %>",
     "{}", NULL, "no implicit conversion of Integer into Array (TypeError)"},
    {"<%= [1] * -1 %>",
     "{}", NULL, "negative argument (ArgumentError)"},
    {"<%= {} + {} %>",
     "{}", NULL, "undefined method `+' for {}:Hash (NoMethodError)"},
    {"<%= :a + \"b\" %>",
     "{}", NULL, "undefined method `+' for :a:Symbol (NoMethodError)"},
    {"<%= [1, [2, [3, [4]]]].flatten.inspect %> <%= [1, [2, [3, [4]]]].flatten(1).inspect %> <%= [1, nil, 2].compact.inspect %> <%= [1, 1, 2].uniq.inspect %> <%= [1, 2].reverse.inspect %> <%= [1, 2].zip([3, 4], [5]).inspect %> <%= [3, 1].min %> <%= [3, 1].max %> <%= [].max.inspect %> <%= [\"b\", \"a\"].max { |a, b| a <=> b } %>",
     "{}", "[1, 2, 3, 4] [1, 2, [3, [4]]] [1, 2] [1, 2] [2, 1] [[1, 3, 5], [2, 4, nil]] 1 3 nil b", NULL},
    {"<%= [1, 2].first(5).inspect %> <%= [1, 2, 3].last(2).inspect %> <%= [].first.inspect %> <%= [1, 2].include\?(2) %> <%= [1, 2].member\?(3) %> <%= [].empty\? %> <%= [1, 2].length %> <%= [\"a\", nil, 1].join(\"-\") %> <%= [1, 2].join %>",
     "{}", "[1, 2] [2, 3] nil true false true 2 a--1 12", NULL},
    /* ---- hash range */
    {"<%= {\"a\" => 1, \"b\" => 2}.value\?(2) %> <%= {\"a\" => 1}.has_value\?(5) %> <%= {\"a\" => 1}[\"a\"] %> <%= {\"a\" => 1}[\"z\"].inspect %> <%= {\"a\" => 1}.key\?(\"a\") %> <%= {\"a\" => 1}.has_key\?(\"a\") %> <%= {\"a\" => 1}.include\?(\"b\") %> <%= {\"a\" => 1}.member\?(\"a\") %>",
     "{}", "true false 1 nil true true false true", NULL},
    {"<%= {\"a\" => 1, \"b\" => 2}.each.to_a.inspect %> <%= {\"a\" => 1}.each_pair.map { |k, v| k + v.to_s }.inspect %> <%= {\"a\" => 1, \"b\" => 2}.map { |k, v| \"#{k}=#{v}\" }.join(\"&\") %> <%= {\"a\" => 1, \"b\" => 2}.each { |kv| kv }.inspect %>",
     "{}", "[[\"a\", 1], [\"b\", 2]] [\"a1\"] a=1&b=2 {\"a\"=>1, \"b\"=>2}", NULL},
    {"<%= {\"a\" => 1, \"b\" => 2}.each { |k, v| break v if k == \"b\" } %>",
     "{}", "2", NULL},
    {"<% {\"a\" => 1, \"b\" => 2}.each do |k, v| %><%= k %>:<%= v %>;<% end %> <% {\"x\" => [1]}.each_pair do |k, v| %><%= k %><%= v.inspect %><% end %>",
     "{}", "a:1;b:2; x[1]", NULL},
    {"<%= {\"a\" => 1, \"b\" => 2}.select { |k, v| v > 1 }.inspect %> <%= {\"a\" => 1, \"b\" => 2}.reject { |k, v| v > 1 }.inspect %> <%= {\"a\" => 1, \"b\" => 2}.filter { |k, v| k == \"a\" }.inspect %> <%= {}.select { |k, v| true }.inspect %>",
     "{}", "{\"b\"=>2} {\"a\"=>1} {\"a\"=>1} {}", NULL},
    {"<%= {\"a\" => 1, \"b\" => 2}.select { |k, v| break k } %>",
     "{}", "a", NULL},
    {"<%= {\"a\" => 1}.merge({\"b\" => 2, \"a\" => 3}).inspect %> <%= {\"a\" => 1}.to_h.inspect %> <%= {\"a\" => 1}.keys.inspect %> <%= {\"a\" => 1}.values.inspect %> <%= {}.empty\? %> <%= {\"a\" => 1}.size %> <%= {\"a\" => 1}.length %>",
     "{}", "{\"a\"=>3, \"b\"=>2} {\"a\"=>1} [\"a\"] [1] true 1 1", NULL},
    {"<%= {\"a\" => 1}.merge(1) %>",
     "{}", NULL, "no implicit conversion of Integer into Hash (TypeError)"},
    {"<%= {\"a\" => 1}.fetch(\"a\") %> <%= {\"a\" => 1}.fetch(\"b\", 0) %> <%= {\"a\" => 1}.fetch(\"b\") { |k| k * 2 } %> <%= {a: 1}.inspect %> <%= {a: 1}[:a] %> <%= {a: 1, b: [2]}.inspect %>",
     "{}", "1 0 bb {:a=>1} 1 {:a=>1, :b=>[2]}", NULL},
    {"<%= (1..5).first %> <%= (1..5).first(2).inspect %> <%= (1..5).last %> <%= (1..5).last(2).inspect %> <%= (1...5).last(2).inspect %> <%= (1..5).size %> <%= (1...5).size %> <%= (5..1).size %> <%= (1..3).to_a.inspect %> <%= (1...4).to_a.inspect %> <%= (3..1).to_a.inspect %>",
     "{}", "1 [1, 2] 5 [4, 5] [3, 4] 5 4 0 [1, 2, 3] [1, 2, 3] []", NULL},
    {"<%= (1..3).map { |x| x * 2 }.inspect %> <%= (1..4).select(&:even\?).inspect %> <%= (1..3).sum %> <%= (1..3).include\?(2) %> <%= (1..3).cover\?(3.5) %> <%= (1...3).member\?(3) %> <%= (1..).include\?(99) %> <%= (\"a\"..\"c\").include\?(\"b\") %> <%= (1..3).count %>",
     "{}", "[2, 4, 6] [2, 4] 6 true false false true true 3", NULL},
    {"<% (1..3).each do |i| %><%= i %><% end %> <% (1...3).each do |i| %><%= i %><% end %>",
     "{}", "123 12", NULL},
    {"<%= (\"a\"..\"e\").to_a.join %> <%= (\"A8\"..\"B1\").to_a.inspect %> <%= (\"az\"..\"bb\").to_a.inspect %> <%= (\"9\"..\"11\").to_a.inspect %> <%= (\"a\"...\"c\").to_a.inspect %>",
     "{}", "abcde [\"A8\", \"A9\", \"B0\", \"B1\"] [\"az\", \"ba\", \"bb\"] [\"9\", \"10\", \"11\"] [\"a\", \"b\"]", NULL},
    {"<%= (1.5..3).to_a %>",
     "{}", NULL, "can't iterate from Float (TypeError)"},
    {"<%= (1..).to_a %>",
     "{}", NULL, "cannot convert endless range to an array (RangeError)"},
    {"<%= (\"a\"..1) %>",
     "{}", NULL, "bad value for range (ArgumentError)"},
    {"<%= (1..3).inspect %> <%= (1...3).to_s %> <%= (\"a\"..\"b\").inspect %> <%= (1..).inspect %>",
     "{}", "1..3 1...3 \"a\"..\"b\" 1..", NULL},
    {"<%= (\"az\"..\"b\").to_a.inspect %> <%= (\"a\"...\"a\").to_a.inspect %> <%= (\"a\"..\"a\").to_a.inspect %> <%= (\"Z\"..\"b\").to_a.inspect %> <%= (\"08\"..\"11\").to_a.inspect %> <%= (\"1\"..\"05\").to_a.inspect %> <%= (\"9\"...\"11\").to_a.inspect %> <%= (\"y\"..\"ab\").to_a.inspect %> <%= (\"zz\"..\"aaa\").to_a.inspect %> <%= (\"a\"...\"aa\").to_a.join %> <%= (\"A\"...\"C\").to_a.inspect %> <%= (\"b\"..\"a\").to_a.inspect %> <%= (\"ab\"..\"b\").to_a.inspect %> <%= (\"10\"..\"9\").to_a.inspect %> <%= (\"\303\251\"..\"\303\253\").to_a.inspect %>",
     "{}", "[\"az\"] [] [\"a\"] [\"Z\", \"[\", \"\\\\\", \"]\", \"^\", \"_\", \"`\", \"a\", \"b\"] [\"08\", \"09\", \"10\", \"11\"] [\"1\", \"2\", \"3\", \"4\", \"5\"] [\"9\", \"10\"] [] [] abcdefghijklmnopqrstuvwxyz [\"A\", \"B\"] [] [\"ab\"] [] [\"\303\251\", \"\303\252\", \"\303\253\"]", NULL},
    {"<% (\"x\"..\"z\").each do |c| %><%= c %>,<% end %> <%= (\"a\"..\"e\").step(2).to_a.inspect %> <%= (\"a\"..\"c\").map(&:upcase).join %>",
     "{}", "x,y,z, [\"a\", \"c\", \"e\"] ABC", NULL},
    {"<%= (1..5).last %> <%= (1...5).last %> <%= (1...5).last(2).inspect %> <%= (\"a\"...\"c\").last %> <%= (1..).size %> <%= (1..3.5).size %> <%= (1...3.0).size %> <%= (\"a\"..).size.inspect %> <%= (\"a\"..\"c\").size.inspect %> <%= (3..1).size %> <%= (1...1).size %> <%= (-5..-1).size %> <%= (1..0.5).size %>",
     "{}", "5 5 [3, 4] c Infinity 3 2 nil nil 0 0 5 0", NULL},
    {"<%= (1..).last %>",
     "{}", NULL, "cannot get the last element of endless range (RangeError)"},
    {"<%= (1..).first(3).inspect %> <%= (2...).first %> <% r = (1...) %><%= r.first(2).inspect %> <%= (1..).first(0).inspect %> <%= (5..).first(1).inspect %>",
     "{}", "[1, 2, 3] 2 [1, 2] [] [5]", NULL},
    {"<%= (1..).first(-1) %>",
     "{}", NULL, "negative array size (or size too big) (ArgumentError)"},
    {"<%= (1..3).each { |x| x }.inspect %> <%= (1..3).each_with_index { |x, i| x }.inspect %> <%= (1..3).each_slice(2) { |x| x }.inspect %> <%= {\"a\" => 1}.each_with_index { |kv, i| i }.inspect %> <%= [1, 2].each_slice(1) { |x| x }.inspect %> <%= (1..3).each { |x| break x * 7 if x == 2 } %>",
     "{}", "1..3 1..3 1..3 {\"a\"=>1} [1, 2] 14", NULL},
    /* ---- grammar */
    {"<% x = 1 %><% x += 2 %><% x -= 1 %><% x *= 5 %><% x **= 2 %><% x /= 3 %><% x %= 7 %><%= x %>",
     "{}", "5", NULL},
    {"<% a = nil %><% a ||= 4 %><% a ||= 5 %><% b = 1 %><% b &&= 9 %><% c = nil %><% c &&= 2 %><%= [a, b, c].inspect %>",
     "{}", "[4, 9, nil]", NULL},
    {"<% s = \"a\" %><% s += \"b\" %><% l = [1] %><% l += [2] %><%= s %> <%= l.inspect %>",
     "{}", "ab [1, 2]", NULL},
    {"<%= 5 - 3 %> <%= -(2 + 1) %> <%= +(3) %> <%= -2.abs %> <% n = 4 %><%= -n %> <%= +n %> <%= - n %>",
     "{}", "2 -3 3 2 -4 4 -4", NULL},
    {"<%= \"abc\" !~ /z/ %> <%= \"abc\" !~ /a/ %> <% l = [1] %><% l << 2 %><%= l.inspect %> <%= ([3] << 4).inspect %>",
     "{}", "true false [1, 2] [3, 4]", NULL},
    {"<%= (1...4).to_a.inspect %> <% r = (1..) %><%= r.first %> <%= (1...).first %>",
     "{}", "[1, 2, 3] 1 1", NULL},
    {"<%= %w[a b c].inspect %> <%= %i[x y].inspect %> <%= [1, 2,].inspect %> <%= { \"k\" => [1, 2], }.inspect %> <%= %w[].inspect %>",
     "{}", "[\"a\", \"b\", \"c\"] [:x, :y] [1, 2] {\"k\"=>[1, 2]} []", NULL},
    {"<% y = 3 %><%= [1, 2].map() { |x| x + y }.inspect %> <%= \"ab\".upcase() %> <%= String(5) %>",
     "{}", "[4, 5] AB 5", NULL},
    {"<%= [1, 2, 3].map { |x| next 0 if x == 2; x }.inspect %> <%= [1, 2, 3].map { |x| break if x == 2; x }.inspect %> <%= [1, 2, 3].map { |x| next x * 10 }.inspect %>",
     "{}", "[1, 0, 3] nil [10, 20, 30]", NULL},
    {"<% [1, 2, 3].each do |x| %><% next if x == 2 %><%= x %><% end %>|<% [1, 2, 3].each do |x| %><% break if x == 2 %><%= x %><% end %>",
     "{}", "13|1", NULL},
    {"<%= [[1, 2], [3, 4]].map { |a, b| a * b }.inspect %> <%= {\"a\" => 1}.map { |k, v| [k, v] }.inspect %> <%= [1, 2].map { || 7 }.inspect %>",
     "{}", "[2, 12] [[\"a\", 1]] [7, 7]", NULL},
    {"<%= [1, 2].map(&:to_s).inspect %> <%= %w[a b].map(&:upcase).join %> <%= [1, 2].select(&:even\?).inspect %> <%= [1, 2].reject(&:even\?).inspect %>",
     "{}", "[\"1\", \"2\"] AB [2] [1]", NULL},
    {"<%= [1, 2, 3].count 2 %> <% x = 5 %><%= x.between\? 1, 9 %> <%= [1, 2].first %><%# comment %>",
     "{}", "1 true 1", NULL},
    {"<%= [1, 2].each_with_index.map { |x, i| x * i }.sum %> <%= (1..10).step(3).to_a.inspect %>",
     "{}", "2 [1, 4, 7, 10]", NULL},
    {"<% v = [1, 2].map { |x| x * 2 } %><%= v.inspect %> <% w = if v.size > 1 then \"big\" else \"small\" end %><%= w %> <%= v.size > 1 \? \"y\" : \"n\" %> <%= v.empty\? || v.first %> <%= v.first && v.last %> <%= !v.empty\? %> <%= (not v.empty\?) %>",
     "{}", "[2, 4] big y 2 4 true true", NULL},
    {"<% x = 0 %><% [1, 2, 3].each { |i| x += i } %><%= x %>",
     "{}", "6", NULL},
    {"<%= [1, 2, 3].map do |x| x * 2 end.inspect %>",
     "{}", "[2, 4, 6]", NULL},
    {"<% z = 2 %><%= case z when 1 then \"one\" when 2, 3 then \"two-three\" else \"other\" end %> <%= case \"abc\" when /b/ then \"has b\" else \"no\" end %> <%= case 5 when 1..3 then \"low\" when Integer then \"int\" end %>",
     "{}", "two-three has b int", NULL},
    {"<% unless false %>u<% end %> <%= \"x\" unless false %> <%= \"y\" if nil %>. <% if 1 > 2 %>a<% elsif 2 > 1 %>b<% else %>c<% end %>",
     "{}", "u x . b", NULL},
    {"<%= \"a#{1 + 1}b#{\"c\"}\" %> <%= 'single #{x}' %> <%= \"tab\\tnl\\\\n\" %> <%= \"\\u00e9\\u{1F600}\" %>",
     "{}", "a2bc single #{x} tab\tnl\\n \303\251\360\237\230\200", NULL},
    {"<%= :sym.inspect %> <%= :\"quoted sym\".inspect %> <%= nil.inspect %> <%= 1e3 %> <%= 1_000 %> <%= 0x1f %> <%= 0b101 %> <%= 0o17 %> <%= 1.5e-3 %>",
     "{}", ":sym :\"quoted sym\" nil 1000.0 1000 31 5 15 0.0015", NULL},
    {"<%= \"\\x41\\x4a\\101\\0\\12\\1234\\x7\".inspect %> <%= \"\\x41B\" %> <%= \"a\\x7e\" %> <%= \"\\60\\061\" %> <%= \"#{1}\\x2d#{2}\" %>",
     "{}", "\"AJA\\u0000\\nS4\\a\" AB a~ 01 1-2", NULL},
    {"<%= \"\\x\" %>",
     "{}", NULL, "invalid hex escape"},
    /* END CASES */
};

static void put_escaped(FILE *out, const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c >= 0x20 && c < 0x7F && c != '\\')
            fputc(c, out);
        else
            fprintf(out, "\\x%02x", c);
    }
}

static void put_json(FILE *out, const char *s)
{
    if (!s) {
        fputs("null", out);
        return;
    }
    fputc('"', out);
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\')
            fprintf(out, "\\%c", c);
        else if (c < 0x20)
            fprintf(out, "\\u%04x", c);
        else
            fputc(c, out);
    }
    fputc('"', out);
}

int main(int argc, char **argv)
{
    size_t ncases = sizeof cases / sizeof cases[0];
    if (argc > 1 && strcmp(argv[1], "--json") == 0) {
        for (size_t i = 0; i < ncases; i++) {
            fputs("{\"tpl\": ", stdout);
            put_json(stdout, cases[i].tpl);
            fputs(", \"state\": ", stdout);
            put_json(stdout, cases[i].state);
            fputs(", \"expect\": ", stdout);
            put_json(stdout, cases[i].expect);
            fputs(", \"msg\": ", stdout);
            put_json(stdout, cases[i].msg);
            fputs("}\n", stdout);
        }
        return 0;
    }
    int pass = 0, fail = 0;
    tpl_render *r = tpl_render_new(NULL);
    if (!r) {
        fprintf(stderr, "test_erb: out of memory\n");
        return 1;
    }
    for (size_t i = 0; i < ncases; i++) {
        const ecase *c = &cases[i];
        tpl_options o;
        memset(&o, 0, sizeof o);
        o.syntax = TPL_SYNTAX_ERB;
        tpl_program *p = NULL;
        tpl_error err;
        memset(&err, 0, sizeof err);
        const char *out = NULL, *emsg = NULL;
        size_t n = 0;
        tpl_status st = tpl_compile("case.erb", c->tpl, strlen(c->tpl), &o, &p, &err);
        if (st == TPL_OK) {
            st = tpl_render_set_state_json(r, c->state, strlen(c->state));
            if (st == TPL_OK)
                st = tpl_render_run(r, p, &out, &n);
            if (st != TPL_OK)
                emsg = tpl_render_error(r)->message;
        } else {
            emsg = err.message;
        }
        bool ok;
        if (c->expect)
            ok = st == TPL_OK && n == strlen(c->expect) && memcmp(out, c->expect, n) == 0;
        else
            ok = st != TPL_OK && (!c->msg || (emsg && strstr(emsg, c->msg)));
        if (ok) {
            pass++;
        } else {
            fail++;
            fprintf(stderr, "test_erb: FAIL case %zu: ", i);
            put_escaped(stderr, c->tpl, strlen(c->tpl));
            fprintf(stderr, "\n  expected: ");
            if (c->expect)
                put_escaped(stderr, c->expect, strlen(c->expect));
            else
                fprintf(stderr, "an error%s%s", c->msg ? " containing " : "", c->msg ? c->msg : "");
            fprintf(stderr, "\n  got:      ");
            if (st == TPL_OK)
                put_escaped(stderr, out, n);
            else
                fprintf(stderr, "error %d: %s", (int)st, emsg ? emsg : "(no message)");
            fputc('\n', stderr);
        }
        tpl_error_clear(&err);
        tpl_program_free(p);
    }
    tpl_render_free(r);
    printf("%d passed, %d failed\n", pass, fail);
    return fail ? 1 : 0;
}
