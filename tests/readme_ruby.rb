# The README's Ruby example (section "Ruby", its first ```ruby block) runs as written, from the
# top of the source tree (it reads examples/front-desk). Session 38: it read a "view.erb" that no
# checkout has and used a `src` it never set.
#   ruby tests/readme_ruby.rb SOURCE_ROOT   (RUBYLIB: the build tree's extension and ruby/lib)
root = ARGV.fetch(0)
readme = File.read(File.join(root, "README.md"))
section = readme[/^## Ruby\n.*?(?=^## )/m] or abort("README.md has no \"## Ruby\" section")
code = section[/^```ruby\n(.*?)^```\n/m, 1] or abort("the Ruby section has no ```ruby block")
Dir.chdir(root) do
  TOPLEVEL_BINDING.eval(code, "README.md (Ruby example)")
  html = TOPLEVEL_BINDING.local_variable_get(:html)
  abort("the example's ERB result is #{html.inspect}, not \"Hello Ann!\"") unless html == "Hello Ann!"
end
# Its second ```ruby block (the prompt store and pages) runs as written too, twice over one store
# (a reader runs it again), in a fresh folder (it writes prompts.db and fr.po there) that sees the
# checkout's examples/. Session 41: it removed demo.hello's only version, then asked for its rows
# (Tpl::Store::NotFound).
require "json"
require "tmpdir"
blocks = section.scan(/^```ruby\n(.*?)^```\n/m).map(&:first)
store_code = blocks.find { |b| b.include?("Tpl::Store.open") } or abort("the Ruby section has no store example")
Dir.mktmpdir("tpl-readme") do |dir|
  File.symlink(File.join(File.expand_path(root), "examples"), File.join(dir, "examples"))
  Dir.chdir(dir) do
    2.times do |i|
      b = TOPLEVEL_BINDING.dup
      b.local_variable_set(:state, JSON.parse(File.read("examples/front-desk/view.2.json")))
      b.eval(store_code, "README.md (Ruby store example)")
      rendered = b.eval('Tpl::Store.open("prompts.db") { |s| s.render("demo.hello:1", { name: "Ada" }, lang: "zz") }')
      abort("run #{i + 1}: the store example renders #{rendered.inspect}, not \"HEY, Ada\"") unless rendered == "HEY, Ada"
      text = b.local_variable_get(:call).text
      abort("run #{i + 1}: the page example's call.text is #{text.inspect}") unless text.is_a?(String) && !text.empty?
    end
  end
end
puts "README Ruby example: ok"
