"""tpl.chat: Hugging Face chat templates rendered as transformers renders them (issue 17 §3).

apply_chat_template(template, messages, tools=None, documents=None, add_generation_prompt=False,
**kwargs) renders `template` (a chat-template string) with the hf profile (trim_blocks,
lstrip_blocks, loop controls, raise_exception, strftime_now, transformers' tojson) and the
variables transformers passes: messages, tools, documents, add_generation_prompt and the extra
keyword arguments (bos_token, eos_token, ...). Compiled templates are cached by source."""
import functools

import tpl as _tpl


@functools.lru_cache(maxsize=64)
def _compiled(template):
    return _tpl.Template(template, profile="hf", name="chat_template")


def apply_chat_template(template, messages, tools=None, documents=None, add_generation_prompt=False, **kwargs):
    ctx = dict(kwargs)
    ctx["messages"] = messages
    ctx["tools"] = tools
    ctx["documents"] = documents
    ctx["add_generation_prompt"] = add_generation_prompt
    return _compiled(template).render(ctx)
