# The two renderers erbfuzz.rb and erbreduce.rb compare: Ruby's ERB in a binding with the locals
# below, and Tpl::ERB with the same names as a state. Each returns the text or [:error, class name].
require "erb"
require "tpl"

def run_erb(src)
  x = 1; y = nil; z = "q"; i = 0; acc = []; s = "hey"; n = 2 # rubocop:disable Lint/UselessAssignment
  ERB.new(src, trim_mode: "-").result(binding)
rescue SyntaxError, StandardError => e
  [:error, e.class.name]
end

def run_tpl(src)
  Tpl::ERB.new(src, trim_mode: "-").result_with_hash("x" => 1, "y" => nil, "z" => "q", "i" => 0, "acc" => [], "s" => "hey", "n" => 2)
rescue Tpl::Error, StandardError, SyntaxError => e
  [:error, e.class.name]
end
