# frozen_string_literal: false
# The reference harness's documented deviation (../shared/conformance/oracle), applied to Ruby's side
# of a differential fuzzer: Symbol#== and String#== equal :k and "k", as tpl's ERB treats them.
class Symbol
  alias_method :__tpl_eq, :==
  def ==(o) o.is_a?(String) ? to_s == o : __tpl_eq(o) end
  def ===(o) self == o end
end

class String
  alias_method :__tpl_eq, :==
  def ==(o) o.is_a?(Symbol) ? self == o.to_s : __tpl_eq(o) end
  def ===(o) self == o end
end
