# Runs the Ruby suite (minitest, Debian's ruby-minitest) against the extension on RUBYLIB.
$stdout.sync = true
Dir[File.join(__dir__, "test_*.rb")].sort.each { |f| require f }
