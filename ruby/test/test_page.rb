# Tpl::Page: a page folder rendered call by call from Ruby (issue 20; include/tpl_page.h),
# byte-equal with `tplc page` on the same folder and states.
require "minitest/autorun"
require "tpl"
require "json"
require "open3"

class TestPage < Minitest::Test
  SRC = ENV["TPL_SOURCE"] || File.expand_path("../..", __dir__)
  DIR = File.join(SRC, "examples", "front-desk")
  TPLC = ENV["TPLC"]

  def test_blocks_and_static_reads
    page = Tpl::Page.load(DIR)
    assert page.frozen?
    assert Ractor.shareable?(page)
    blocks = page.blocks
    assert_equal %w[identity knowledge tools view], blocks.map { |b| b[:name] }
    assert_equal %i[static static static dynamic], blocks.map { |b| b[:region] }
    blocks.select { |b| b[:region] == :static }.each do |b|
      assert_empty b[:reads] - ["call.channel", "call.medium"], b.inspect
    end
    assert_includes blocks.last[:reads], "stage"
  end

  def test_call_steps_change_tracking
    call = Tpl::Page.load(DIR).call(channel: "phone")
    s1 = JSON.parse(File.read(File.join(DIR, "view.1.json")))
    s2 = JSON.parse(File.read(File.join(DIR, "view.2.json")))
    b1 = call.render(s1).blocks
    assert_equal [true, false, true, true], b1.map { |b| b[:rendered] } # (knowledge is a text block)
    b2 = call.render(s2).blocks
    assert_equal [false, false, false, true], b2.map { |b| b[:rendered] }
    b3 = call.render(s2).blocks
    assert_equal [false, false, false, false], b3.map { |b| b[:changed] }
    call.reset
    assert_equal [true, false, true, true], call.render(s2).blocks.map { |b| b[:rendered] }
  end

  def test_text_equals_tplc_page
    skip "TPLC not set" unless TPLC
    %w[phone whatsapp].each do |ch|
      st = File.join(DIR, "view.2.json")
      want, status = Open3.capture2(TPLC, "page", DIR, "--state", st, "--channel", ch)
      assert status.success?
      got = Tpl::Page.load(DIR).call(channel: ch).render(File.read(st)).text
      assert_equal want, got
    end
  end

  def test_errors
    e = assert_raises(Tpl::Error) { Tpl::Page.load(File.join(SRC, "tests", "page", "static-claimed")) }
    assert_match(/static block/, e.message)
    assert_raises(Tpl::Error) { Tpl::Page.load("/nonexistent/page") }
    call = Tpl::Page.load(DIR).call
    assert_raises(Tpl::StateError) { call.render("{not json") }
    assert_raises(ArgumentError) { call.set(colour: "red") }
  end
end
