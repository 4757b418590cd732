"""A real ChatML base (SmolLM2's template) gets craft's training template, with the assistant marked."""

from types import SimpleNamespace

from runtime.train.pretrained import use_chatml_training_template

# SmolLM2-135M-Instruct's own template, as its .gguf file carries it: ChatML, no
# `{% generation %}` markers, but the word "generation" in `add_generation_prompt`.
SMOLLM2 = ("{% for message in messages %}{{'<|im_start|>' + message['role'] + '\\n' + message['content'] + "
           "'<|im_end|>' + '\\n'}}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}")


def test_a_chatml_template_without_markers_is_replaced_even_though_it_says_add_generation_prompt():
    tokenizer = SimpleNamespace(chat_template=SMOLLM2, eos_token="<|im_end|>")
    assert use_chatml_training_template(tokenizer) is True
    assert "{%- generation %}" in tokenizer.chat_template


def test_a_template_that_already_marks_the_assistant_is_kept():
    marked = SMOLLM2.replace("message['content']", "{% generation %}x{% endgeneration %}")
    tokenizer = SimpleNamespace(chat_template=marked, eos_token="<|im_end|>")
    assert use_chatml_training_template(tokenizer) is False and tokenizer.chat_template == marked


def test_a_template_that_is_not_chatml_is_kept():
    tokenizer = SimpleNamespace(chat_template="{{ messages }}", eos_token="</s>")
    assert use_chatml_training_template(tokenizer) is False
