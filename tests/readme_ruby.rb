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
puts "README Ruby example: ok"
