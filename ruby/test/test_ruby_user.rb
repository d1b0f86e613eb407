# Tpl::ERB as a Ruby user switching from ERB meets it (session 33): exceptions raised by Ruby
# code the template calls are rescued by the template's begin/rescue as Ruby's are, by class and
# ancestors; Comparable objects sort; frozen Arrays and Hashes stay frozen; a Hash with a default
# answers [] with it. Each template renders with Ruby's ERB and Tpl::ERB in the same process.
require "minitest/autorun"
require "erb"
require "tpl"

class TestRubyUser < Minitest::Test
  class MyErr < StandardError; end
  class SubArg < ArgumentError; end
  module Tagged; end
  class TagErr < StandardError; include Tagged; end

  class Host
    def fail_my = raise(MyErr, "mine")
    def fail_sub = raise(SubArg)
    def to_s = raise("no to_s")
    def ni = raise(NotImplementedError, "nie")
    def tag = raise(TagErr, "tg")
    def long = raise(ArgumentError, "x" * 400)
    def ok = "fine"
  end

  class Ver
    include Comparable
    attr_reader :v

    def initialize(v) = @v = v
    def <=>(other) = v <=> other.v
    def to_s = "v#{v}"
    def inspect = "#<Ver #{v}>"
  end

  class View
    def initialize
      @h = Host.new
      @vs = [Ver.new(3), Ver.new(1), Ver.new(2)]
      @fa = [1, 2].freeze
      @fh = { a: 1 }.freeze
      @hd = Hash.new { |_h, k| "dflt-#{k}" }
      @hd[:a] = 1
      @hz = Hash.new(0)
    end

    def boom = raise(ArgumentError, "bad arg")
    def remembers?(w) = w == "x" ? raise(KeyError, "rk") : true

    # the result, or the exception's class and message (without tpl's location suffix)
    def run(src, cls)
      cls.new(src, trim_mode: "-").result(binding)
    rescue StandardError, ScriptError => e
      [e.class, e.message.sub(/ \(tpl: raised while rendering .*\)\z/m, "")]
    end
  end

  def assert_same_as_erb(src)
    assert_equal View.new.run(src, ERB), View.new.run(src, Tpl::ERB), src
  end

  def test_rescue_of_ruby_exceptions
    ["<% begin %><%= boom %><% rescue ArgumentError => e %>R:<%= e.message %><% end %>",
     "<% begin; boom; rescue => e; %>R:<%= e.class %> <%= e.message %><% end %>",
     "<% begin %><%= boom %><% rescue ArgumentError %>x<% ensure %>E<% end %>",
     "<%= (boom rescue 'inl') %>", "<% x = @h.fail_my rescue 'fallback' %><%= x %>",
     "<% begin %><%= boom %><% rescue TypeError %>T<% end %>",
     "<% n = 0 %><% begin %><% n += 1 %><%= boom if n < 3 %><% rescue ArgumentError %><% retry %><% end %><%= n %>",
     "<% begin %><%= @h.fail_my %><% rescue MyErr => e %>[<%= e.message %>|<%= e.class %>]<% end %>",
     "<% begin %><%= @h.fail_my %><% rescue => e %>[<%= e.class.name %>|<%= e.is_a?(StandardError) %>]<% end %>",
     "<% begin %><%= @h.fail_sub %><% rescue ArgumentError => e %>[<%= e.message %>|<%= e.class %>]<% end %>",
     "<% begin %><%= @h.fail_sub %><% rescue SubArg => e %>[<%= e.inspect %>]<% end %>",
     "<% begin %><%= @h %><% rescue RuntimeError => e %>[<%= e.message %>]<% end %>",
     "<% begin %><%= @h.ni %><% rescue => e %>[<%= e.message %>]<% end %>",
     "<% begin %><%= @h.ni %><% rescue ScriptError => e %>[<%= e.message %>]<% end %>",
     "<% begin %><%= @h.ni %><% rescue Exception => e %>[<%= e.class %>]<% end %>",
     "<% begin %><%= @h.tag %><% rescue Tagged => e %>[<%= e.message %>]<% end %>",
     "<% begin %><%= @h.long %><% rescue => e %>[<%= e.message.size %>]<% end %>",
     "<% begin %><% begin %><%= @h.fail_my %><% rescue ArgumentError %>A<% end %><% rescue MyErr => e %>O:<%= e.message %><% end %>",
     "<% begin %><%= @h.fail_my %><% rescue MyErr %><% raise %><% end %>",
     "<% begin %><%= @h.fail_my %><% rescue MyErr %><%= $!.message %><% end %>",
     "<% begin %><%= @h.fail_my %><% rescue %>r<% else %>e<% ensure %>E<% end %>",
     "<% begin %><%= @h.ok %><% rescue %>r<% else %>e<% ensure %>E<% end %>",
     "<% begin %><% remembers?('x') %><% rescue KeyError => e %>K<%= e.message %><% end %>",
     "<%= [1, 2].map { |i| begin; i == 2 ? boom : i; rescue ArgumentError; 'b'; end }.join %>",
     "<% begin %><%= @h.fail_my %><% rescue MyErr, ArgumentError %>M<% end %>",
     "<% begin %><%= @h.fail_my %><% rescue MyErr %><% boom %><% end %>"].each { |src| assert_same_as_erb(src) }
  end

  # an exception no rescue takes is Ruby's own, located where the template called the method
  def test_unrescued_exception_keeps_its_location
    src = "<% begin %>\n<%= @h.fail_my %><% rescue ArgumentError %>A<% end %>"
    e = assert_raises(MyErr) { Tpl::ERB.new(src).result(View.new.instance_eval { binding }) }
    assert_equal "mine (tpl: raised while rendering (erb), line 2, column 8)", e.message
  end

  def test_comparable_objects_sort
    ["<%= @vs.sort.map(&:to_s).join(',') %> <%= @vs.max %> <%= @vs.min.inspect %>",
     "<%= @vs.sort_by(&:v).first %> <%= @vs.minmax.inspect %> <%= @vs.sort.reverse.first %>",
     "<%= @vs[0] > @vs[1] %> <%= @vs[0].clamp(@vs[1], @vs[2]) %>"].each { |src| assert_same_as_erb(src) }
  end

  def test_frozen_arrays_and_hashes
    ["<%= @fa.frozen? %> <%= @fh.frozen? %>", "<% x = @fa.dup; x.push(3) %><%= x.inspect %><%= x.frozen? %>",
     "<%= @fa.map { |v| v }.frozen? %> <%= @fa.clone.frozen? %>"].each { |src| assert_same_as_erb(src) }
    h = { a: [1, 2].freeze, h: { k: 1 }.freeze, l: [{ "x" => "y" }].freeze, m: [1].freeze.dup }
    src = "<%= a.frozen? %><%= h.frozen? %><%= l.frozen? %><%= m.frozen? %><%= l.first.frozen? %>"
    assert_equal ERB.new(src).result_with_hash(h), Tpl::ERB.new(src).result_with_hash(h)
    assert_equal "truetruetruefalse", Tpl::Template.new("<%= a.frozen? %><%= h.frozen? %><%= l.frozen? %><%= m.frozen? %>",
                                                        syntax: :erb).render(h)
  end

  # defined?(self.name): a private method is nil (a receiver-less name's defined? is "method")
  def test_defined_self_dot_private
    ["<%= defined?(self.remembers?).inspect %> <%= defined?(self.boom).inspect %> <%= defined?(boom).inspect %>",
     "<%= defined?(self.run).inspect %> <%= defined?(run).inspect %>"].each { |src| assert_same_as_erb(src) }
  end

  def test_hash_defaults
    ["<%= @hd[:a] %> <%= @hd[:b] %> <%= @hd.size %> <%= @hd.key?(:b) %> <%= @hd.dig(:zz) %>",
     '<%= @hz[:q] + 1 %> <%= @hz.default %> <%= @hd.map { |k, v| "#{k}=#{v}" }.join %> <%= @hd %>'].each { |src| assert_same_as_erb(src) }
  end
end
