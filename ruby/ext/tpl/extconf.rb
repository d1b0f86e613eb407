# Builds the extension for `gem install` (README "Ruby"): libtpl is built from the gem's own copy
# of the tpl sources as a meson subproject of a small parent project that also builds tpl_ext.so
# (the same C file the source tree's meson build compiles). Needs what the source build needs
# (Debian: meson ninja-build re2c lemon pkg-config unicode-data libutf8proc-dev libjansson-dev
# libonig-dev libxxhash-dev libsqlite3-dev libpq-dev libgettextpo-dev, ruby-dev); no network.
# The Makefile it writes runs ninja and installs tpl/tpl_ext.so where RubyGems asks.
require "fileutils"
require "rbconfig"

root = File.expand_path("../../..", __dir__)
parent = File.join(Dir.pwd, "tpl-parent")
FileUtils.mkdir_p(File.join(parent, "subprojects"))
link = File.join(parent, "subprojects", "tpl")
FileUtils.rm_f(link)
File.symlink(root, link)
File.write(File.join(parent, "subprojects", "tpl.wrap"), <<~WRAP)
  [wrap-file]
  directory = tpl

  [provide]
  tpl = libtpl_dep
  tpl-store = libtpl_store_dep
WRAP
ruby_pc = "ruby-#{RbConfig::CONFIG['MAJOR']}.#{RbConfig::CONFIG['MINOR']}"
File.write(File.join(parent, "meson.build"), <<~MESON)
  project('tpl-gem', 'c', default_options : ['c_std=c11', 'buildtype=release', 'b_staticpic=true'])
  tpl_dep = dependency('tpl')
  tpl_store_dep = dependency('tpl-store')
  rb_dep = dependency('#{ruby_pc}', 'ruby')
  cc = meson.get_compiler('c')
  rb_args = cc.has_function('rb_hash_stlike_foreach', dependencies : rb_dep) ? ['-DTPL_HAVE_RB_HASH_STLIKE_FOREACH=1'] : []
  if cc.links('struct rb_ractor_struct; extern struct rb_ractor_struct *ruby_single_main_ractor; int main(void) { return ruby_single_main_ractor != 0; }',
              dependencies : rb_dep, name : 'ruby_single_main_ractor')
    rb_args += ['-DTPL_HAVE_RUBY_SINGLE_MAIN_RACTOR=1']
  endif
  shared_module('tpl_ext', '#{File.join(root, 'ruby', 'ext', 'tpl', 'tpl_ext.c')}',
    name_prefix : '', name_suffix : 'so', dependencies : [tpl_store_dep, tpl_dep, rb_dep], c_args : rb_args,
    gnu_symbol_visibility : 'hidden')
MESON
build = File.join(parent, "build")
unless File.exist?(File.join(build, "build.ninja"))
  system("meson", "setup", build, parent) or abort "tpl: meson setup failed (see #{build}/meson-logs)"
end
File.write("Makefile", <<~MAKE)
  # written by extconf.rb
  sitearchdir = #{RbConfig::CONFIG['sitearchdir']}
  all:
  \tninja -C #{build}
  install: all
  \tmkdir -p $(sitearchdir)/tpl
  \tcp #{build}/tpl_ext.so $(sitearchdir)/tpl/tpl_ext.so
  clean:
  \t@true
MAKE
