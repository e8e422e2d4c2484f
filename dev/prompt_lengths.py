"""How long a config's Twenty Questions prompts get, turn by turn, with a given tokenizer: does the history fit
``model.policy.max_prompt_tokens`` at the game's turn limit?

For each turn t the script renders the config's template (``model.policy.template``) around a history of t
questions and counts its tokens, for two histories: ``typical``, whose questions are ``--question`` (a question
as long as a 7B instruct model's usual ones), and ``longest``, whose questions are each ``--question-tokens`` tokens
long (by default ``model.policy.max_new_tokens``: no generated question is longer) and answered
``Invalid Question.``, the longest answer. It also counts the template's fixed parts (its text around an empty
history), and prints the turn from which each history is over the limit, when it is: from there the policy cuts the
oldest turns (``LanguagePolicy.encode_prompts``).

``--tokenizer`` is a Hugging Face tokenizer folder or a SentencePiece ``.model`` file. A ``.model`` file is read
with protobuf, as transformers' converter reads it, without the ``sentencepiece`` package: Mistral-7B's vocabulary
is ``mistral_common/data/tokenizer.model.v1`` in the PyPI package ``mistral-common`` (``pip download --no-deps
mistral-common`` and unzip that file); it gets Mistral-7B-Instruct-v0.2's chat format (``MISTRAL_CHAT_TEMPLATE``).

    python dev/prompt_lengths.py --tokenizer /tmp/tokenizer.model.v1 --config-name archer_llm_20q
"""

from __future__ import annotations

import sys
from pathlib import Path

from devkit import parse_run, run_parser, write_records
from transformers import AutoTokenizer, PreTrainedTokenizerBase, PreTrainedTokenizerFast

from archer.envs.question_game import INITIAL_OBSERVATION
from archer.models.templates import get_template

# Mistral-7B-Instruct-v0.2's chat template, rendering user turns only (the policy's prompt is one user turn).
MISTRAL_CHAT_TEMPLATE = (
    "{{ bos_token }}{% for message in messages %}{% if message['role'] == 'user' %}"
    "{{ '[INST] ' + message['content'] + ' [/INST]' }}{% else %}{{ message['content'] + eos_token }}{% endif %}"
    "{% endfor %}"
)
TYPICAL_QUESTION = "Is the hidden word something that is commonly found in a household or an office?"
LONGEST_ANSWER = "Invalid Question."


def sentencepiece_tokenizer(model_file: Path) -> PreTrainedTokenizerFast:
    """A Llama-style fast tokenizer (BOS added, byte fallback, legacy ``▁`` prefix) of a SentencePiece BPE model,
    built as transformers' ``LlamaConverter`` builds it, with Mistral's chat template."""
    from tokenizers import AddedToken, Tokenizer, decoders, models, normalizers, processors
    from transformers.convert_slow_tokenizer import generate_merges, import_protobuf

    proto = import_protobuf().ModelProto()
    proto.ParseFromString(model_file.read_bytes())
    vocab = {piece.piece: i for i, piece in enumerate(proto.pieces)}
    raw = Tokenizer(
        models.BPE(vocab, generate_merges(vocab), unk_token="<unk>", fuse_unk=True, byte_fallback=True, dropout=None)
    )
    raw.add_special_tokens([AddedToken(token, normalized=False, special=True) for token in ("<unk>", "<s>", "</s>")])
    raw.normalizer = normalizers.Sequence([normalizers.Prepend("▁"), normalizers.Replace(" ", "▁")])
    raw.decoder = decoders.Sequence(
        [decoders.Replace("▁", " "), decoders.ByteFallback(), decoders.Fuse(), decoders.Strip(" ", 1, 0)]
    )
    raw.post_processor = processors.TemplateProcessing(single="<s> $A", special_tokens=[("<s>", vocab["<s>"])])
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=raw, bos_token="<s>", eos_token="</s>", unk_token="<unk>", clean_up_tokenization_spaces=False
    )
    tokenizer.chat_template = MISTRAL_CHAT_TEMPLATE
    return tokenizer


def load_tokenizer(name: str) -> PreTrainedTokenizerBase:
    """A SentencePiece ``.model`` file (``sentencepiece_tokenizer``) or a Hugging Face tokenizer folder."""
    path = Path(name).expanduser()
    if path.is_file():
        return sentencepiece_tokenizer(path)
    return AutoTokenizer.from_pretrained(name)


def question_of(tokenizer: PreTrainedTokenizerBase, text: str, tokens: int) -> str:
    """``text`` repeated and cut to ``tokens`` tokens (in this tokenizer), as one line."""
    ids = tokenizer((text + " ") * (tokens // 4 + 1), add_special_tokens=False)["input_ids"][:tokens]
    return tokenizer.decode(ids, clean_up_tokenization_spaces=False).replace("\n", " ").strip()


def history(question: str, answer: str, turns: int) -> str:
    return INITIAL_OBSERVATION + f"{question} {answer}\n" * turns


def prompt_lengths(
    tokenizer: PreTrainedTokenizerBase, template_name: str, questions: dict[str, tuple[str, str]], turns: int
) -> dict[str, list[int]]:
    """Tokens of the prompt after 0..``turns`` turns of each history ``name -> (question, answer)``, and of the
    template's fixed parts (``fixed``, one value)."""
    template = get_template(template_name, tokenizer)

    def count(text: str) -> int:
        return len(tokenizer(template(text), verbose=False)["input_ids"])

    lengths = {"fixed": [count("")]}
    for name, (question, answer) in questions.items():
        lengths[name] = [count(history(question, answer, t)) for t in range(turns + 1)]
    return lengths


def first_over(lengths: list[int], limit: int) -> int | None:
    """The first turn whose prompt is over ``limit`` tokens, or None."""
    return next((turn for turn, length in enumerate(lengths) if length > limit), None)


def main(argv: list[str] | None = None) -> dict:
    parser = run_parser(__doc__.splitlines()[0], default_config="archer_llm_20q")
    parser.add_argument("--tokenizer", required=True, help="a Hugging Face tokenizer folder or a SentencePiece .model")
    parser.add_argument("--question", default=TYPICAL_QUESTION, help="the typical history's question")
    parser.add_argument("--question-tokens", type=int, default=None, help="the longest question (max_new_tokens)")
    args, cfg = parse_run(parser, argv)
    policy = cfg.model.policy
    tokenizer = load_tokenizer(args.tokenizer)
    longest_tokens = args.question_tokens or policy.max_new_tokens
    questions = {
        "typical": (args.question, "Yes."),
        "longest": (question_of(tokenizer, TYPICAL_QUESTION, longest_tokens), LONGEST_ANSWER),
    }
    turns = cfg.env.max_turns
    lengths = prompt_lengths(tokenizer, policy.template, questions, turns)
    record = {
        "config": args.config_name,
        "template": policy.template,
        "max_prompt_tokens": policy.max_prompt_tokens,
        "turns": turns,
        "fixed_tokens": lengths["fixed"][0],
        "questions": {name: question for name, (question, _) in questions.items()},
        **{f"{name}_tokens": lengths[name] for name in questions},
        **{f"{name}_first_over": first_over(lengths[name], policy.max_prompt_tokens) for name in questions},
    }
    print(f"{args.config_name}: template {policy.template}, max_prompt_tokens {policy.max_prompt_tokens}")
    print(f"fixed parts: {record['fixed_tokens']} tokens")
    for name in questions:
        over = record[f"{name}_first_over"]
        where = f"over the limit from turn {over}" if over is not None else "within the limit at every turn"
        print(f"{name} history: {lengths[name][turns]} tokens at turn {turns}, {where}")
    write_records(args.json, record)
    return record


if __name__ == "__main__":
    main(sys.argv[1:])
