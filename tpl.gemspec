# The Ruby gem `tpl` (issue 20). Offline: gem build tpl.gemspec && gem install --local tpl-0.1.0.gem
# (README "Ruby"); the extension builds libtpl from the sources packed here (ruby/ext/tpl/extconf.rb).
Gem::Specification.new do |s|
  s.name = "tpl"
  s.version = "0.1.0"
  s.summary = "Jinja2, ERB and str.format prompt templates compiled to bytecode, byte-identical to the reference engines"
  s.description = "Tpl::ERB (stdlib ERB's API) and Tpl::Template over libtpl, a template compiler and bytecode VM in C."
  s.authors = ["tpl"]
  s.license = "MIT"
  s.required_ruby_version = ">= 3.1"
  s.homepage = "https://example.invalid/tpl"
  dirs = %w[include runtime stdlib grammar compiler page store tplc tools]
  s.files = %w[meson.build meson_options.txt README.md docs/tplc.1 tpl.gemspec] +
            dirs.flat_map { |d| Dir.glob("#{d}/**/*", base: __dir__) }.reject { |f| File.directory?(File.join(__dir__, f)) } +
            %w[ruby/lib/tpl.rb ruby/ext/tpl/tpl_ext.c ruby/ext/tpl/extconf.rb]
  s.require_paths = ["ruby/lib"]
  s.extensions = ["ruby/ext/tpl/extconf.rb"]
end
