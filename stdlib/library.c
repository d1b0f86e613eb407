/* The standard library's table of entry points for the runtime (runtime/library.h): the VM, the
 * printer and the verifier reach the builtins only through `tpl_stdlib`. */
#include "builtins.h"
#include "ruby/ruby.h"
#include "prompt/tr.h"

_Static_assert(TPL_B__COUNT <= TPL_BUILTINS_MAX, "raise TPL_BUILTINS_MAX (runtime/library.h)");
_Static_assert((int)TPL_B__COUNT < (int)TPL_FN_TYPE, "a builtin id below the class values' aux (runtime/value.h)");

const tpl_library tpl_stdlib = {
    .table = tpl_builtin_table,
    .nbuiltins = TPL_B__COUNT,
    .signature = tpl_builtin_signature,
    .find = tpl_builtin_find,
    .filter_variant = tpl_builtin_filter_variant,
    .ids_for = tpl_builtin_ids_for,
    .bind = tpl_builtin_bind,
    .undefined_error = tpl_undefined_error,
    .undefined_debug_str = tpl_undefined_debug_str,
    .format_value = tpl_format_value,
    .str_mod = tpl_str_mod,
    .markup_method = tpl_markup_method,
    .fmt_begin = tpl_fmt_begin,
    .fmt_item = tpl_fmt_item,
    .fmt_attr = tpl_fmt_attr,
    .fmt_conv = tpl_fmt_conv,
    .rb_send = tpl_rb_send,
    .rb_equal = tpl_vm_rb_equal,
    .rb_getitem = tpl_rb_getitem,
    .rb_range = tpl_rb_range,
    .rb_each_list = tpl_rb_each_list,
    .rb_plain_method = tpl_rb_plain_method,
    .rb_arith = tpl_rb_arith,
    .rb_compare_check = tpl_rb_compare_check,
    .ext_new = tpl_prompt_new,
    .ext_free = tpl_prompt_free,
    .ext_global = tpl_prompt_global,
    .remembers_ascii = tpl_prompt_remembers_ascii,
    .remembers_kept = tpl_prompt_remembers_kept,
    .id_escape = TPL_B_FILTER_escape,
    .id_default = TPL_B_FILTER_default,
    .id_length = TPL_B_FILTER_length,
    .id_upper = TPL_B_FILTER_upper,
    .id_lower = TPL_B_FILTER_lower,
    .id_join = TPL_B_FILTER_join,
    .id_trim = TPL_B_FILTER_trim,
    .id_raise_exception = TPL_B_GLOBAL_raise_exception,
    .id_unsafe_method = TPL_B_GLOBAL_unsafe_method,
    .id_mut_lo = TPL_B_LIST_append,
    .id_mut_hi = TPL_B_MAP_clear,
    .id_strftime_now = TPL_B_GLOBAL_strftime_now,
    .id_remembers = TPL_B_GLOBAL_remembers,
    .id_e = TPL_B_FILTER_e,
    .id_forceescape = TPL_B_FILTER_forceescape,
    .id_string = TPL_B_FILTER_string,
    .id_range = TPL_B_GLOBAL_range,
    .id_range_hf = TPL_B_GLOBAL_range_hf,
};
