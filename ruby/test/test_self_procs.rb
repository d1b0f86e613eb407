# Issue 20, session 36: lambda { } / proc { } without a receiver call self's own lambda/proc
# when the binding's self has one (Ruby's method lookup): a located refusal, as for loop;
# ->() { } is the syntax's own. Host code the render calls is the host's: a Ruby method that
# loops is not bounded by tpl's fuel, and a throw, Timeout or Thread#kill out of it ends the
# render and goes on as Ruby's jump (the render's own work stays fuel-bounded).
require "minitest/autorun"
require "erb"
require "timeout"
require "tpl"

class TestSelfProcs < Minitest::Test
  class Own
    def lambda(*) = "my-lambda"
    def proc(*) = "my-proc"
    def run(src, cls) = cls.new(src, trim_mode: "-").result(binding)
  end

  class PrivateOwn
    private def lambda(*) = "priv"
    def run(src, cls) = cls.new(src, trim_mode: "-").result(binding)
  end

  module ProcHelper
    def proc(*) = "mod-proc"
  end

  class Included
    include ProcHelper
    def run(src, cls) = cls.new(src, trim_mode: "-").result(binding)
  end

  class Plain
    def run(src, cls) = cls.new(src, trim_mode: "-").result(binding)
  end

  LAMBDA = ["<%= f = lambda { |x| x * 2 }; f.call(2) %>", "<% f = lambda do |x| x end %><%= f.(3) %>",
            "<%= [1, 2].map(&lambda { |x| x + 1 }).inspect %>", "<% def m; f = lambda { 2 }; f.call; end %><%= m %>"].freeze
  PROC = ["<% f = proc { |x| x } %><%= f.call(5) %>", "<%= [1, 2].each(&proc { |x| x }).size %>"].freeze
  SAME = ["<%= ->(x) { x * 3 }.call(2) %>", "<%= Proc.new { 7 }.call %>", "<%= [1].map(&->(x) { x + 1 }).inspect %>"].freeze

  def refused(o, src, name)
    e = assert_raises(::SyntaxError, src) { o.run(src, Tpl::ERB) }
    assert_match(/\A\(erb\):1:\d+: error: unsupported Ruby construct: `#{name}' is self's own method here/, e.message, src)
  end

  def test_self_lambda_and_proc_refused
    LAMBDA.each { |src| refused(Own.new, src, "lambda") }
    LAMBDA.each { |src| refused(PrivateOwn.new, src, "lambda") }
    PROC.each { |src| refused(Own.new, src, "proc") }
    PROC.each { |src| refused(Included.new, src, "proc") }
    # Ruby calls self's: what ERB prints is not the block's (the cases just outside the rule)
    assert_raises(NoMethodError) { Own.new.run(LAMBDA[0], ERB) }
  end

  def test_kernel_lambda_proc_and_arrow_same_as_erb
    [Plain, Included].each do |k|
      (LAMBDA + SAME + (k == Plain ? PROC : [])).each do |src|
        assert_equal k.new.run(src, ERB), k.new.run(src, Tpl::ERB), "#{k} #{src}"
      end
    end
    SAME.each { |src| assert_equal Own.new.run(src, ERB), Own.new.run(src, Tpl::ERB), src }
  end

  class Spin
    def spin = loop {}
    def stop = throw(:done, "thrown")
    def b = binding
  end

  def test_host_code_interrupted_by_timeout_throw_and_kill
    t = Tpl::ERB.new("a<%= spin %>b")
    t0 = Process.clock_gettime(Process::CLOCK_MONOTONIC)
    assert_raises(Timeout::Error) { Timeout.timeout(0.3) { t.result(Spin.new.b) } }
    assert_operator Process.clock_gettime(Process::CLOCK_MONOTONIC) - t0, :<, 5
    src = "<% begin %><%= stop %><% rescue => e %>rescued<% end %>"
    assert_equal catch(:done) { ERB.new(src).result(Spin.new.b) }, catch(:done) { Tpl::ERB.new(src).result(Spin.new.b) }
    th = Thread.new { t.result(Spin.new.b) }
    sleep 0.1
    th.kill
    assert_nil th.join(5)&.value
    assert_equal false, th.status
    assert_equal "ab", Tpl::ERB.new("a<%= 1 if false %>b").result(Spin.new.b)
    assert_equal "x2", Tpl::ERB.new("x<%= [1].size + 1 %>").result(Spin.new.b)
  end
end
