"""distilabel's side of bench/peers.py: a `Pipeline` of `LoadDataFromDicts` -> `ChatGeneration(OpenAILLM)` over
every prompt of PROMPTS, cache off; counts the answers. Runs in distilabel's own virtual environment."""
import argparse
import json
import os

IMPORTS = ("from distilabel.models import OpenAILLM\nfrom distilabel.pipeline import Pipeline\n"
           "from distilabel.steps import LoadDataFromDicts\nfrom distilabel.steps.tasks import ChatGeneration")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--api-base", required=True)
    parser.add_argument("--prompts", required=True)
    parser.add_argument("--concurrency", type=int, default=64)
    parser.add_argument("--work", required=True)
    args = parser.parse_args()
    os.environ.setdefault("DISTILABEL_CACHE_DIR", os.path.join(args.work, "distilabel-cache"))
    exec(IMPORTS, globals())
    rows = [json.loads(line) for line in open(args.prompts, encoding="utf-8")]
    with Pipeline(name="bench", cache_dir=os.path.join(args.work, "distilabel-cache")) as pipeline:  # noqa: F821
        load = LoadDataFromDicts(data=rows, batch_size=args.concurrency)  # noqa: F821
        chat = ChatGeneration(llm=OpenAILLM(base_url=args.api_base, api_key="x", model="bench"),  # noqa: F821
                              input_batch_size=args.concurrency)
        load >> chat
    distiset = pipeline.run(use_cache=False)
    answers = sum(len(split) for config in distiset.values() for split in config.values())
    print(json.dumps({"answers": answers}))


if __name__ == "__main__":
    main()
