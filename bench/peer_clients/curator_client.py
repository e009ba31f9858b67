"""curator's side of bench/peers.py: send every prompt of PROMPTS through `curator.LLM` (openai backend) and count
the answers. Runs in curator's own virtual environment; prints one JSON line."""
import argparse
import json
import os

IMPORTS = "from bespokelabs import curator"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--api-base", required=True)
    parser.add_argument("--prompts", required=True)
    parser.add_argument("--concurrency", type=int, default=64)
    parser.add_argument("--work", required=True)
    args = parser.parse_args()
    os.environ.setdefault("CURATOR_DISABLE_CACHE", "1")
    os.environ.setdefault("CURATOR_CACHE_DIR", os.path.join(args.work, "curator-cache"))
    exec(IMPORTS, globals())
    rows = [json.loads(line) for line in open(args.prompts, encoding="utf-8")]

    class Ask(curator.LLM):  # noqa: F821 (imported by exec)
        def prompt(self, row):
            return row["messages"]

        def parse(self, row, response):
            return {"length": len(response)}

    ask = Ask(model_name="bench", backend="openai", backend_params={
        "base_url": args.api_base, "api_key": "x", "max_concurrent_requests": args.concurrency,
        "max_requests_per_minute": 10**7, "max_tokens_per_minute": 10**10})
    result = ask(rows, working_dir=os.path.join(args.work, "curator-run"))
    dataset = getattr(result, "dataset", result)
    print(json.dumps({"answers": len(dataset)}))


if __name__ == "__main__":
    main()
