"""data-designer's side of bench/peers.py: a seed DataFrame of the prompts and one `LLMTextColumnConfig` (system and
user prompt taken from the seed columns), max_parallel_requests = concurrency, no health check; counts the answers.
Runs in data-designer's own virtual environment."""
import argparse
import json
import os

IMPORTS = "import data_designer.config as dd\nfrom data_designer.interface import DataDesigner\nimport pandas as pd"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--api-base", required=True)
    parser.add_argument("--prompts", required=True)
    parser.add_argument("--concurrency", type=int, default=64)
    parser.add_argument("--work", required=True)
    args = parser.parse_args()
    os.environ.setdefault("NEMO_TELEMETRY_ENABLED", "false")
    exec(IMPORTS, globals())
    rows = [json.loads(line) for line in open(args.prompts, encoding="utf-8")]
    seed = pd.DataFrame({"system": [r["messages"][0]["content"] for r in rows],  # noqa: F821
                         "user": [r["messages"][1]["content"] for r in rows]})
    model = dd.ModelConfig(alias="bench", model="bench", provider="fake", skip_health_check=True,  # noqa: F821
                           inference_parameters=dd.ChatCompletionInferenceParams(  # noqa: F821
                               max_parallel_requests=args.concurrency))
    builder = dd.DataDesignerConfigBuilder(model_configs=[model])  # noqa: F821
    builder.with_seed_dataset(dd.DataFrameSeedSource(df=seed))  # noqa: F821
    builder.add_column(dd.LLMTextColumnConfig(name="answer", prompt="{{ user }}",  # noqa: F821
                                              system_prompt="{{ system }}", model_alias="bench"))
    designer = DataDesigner(artifact_path=os.path.join(args.work, "data-designer"),  # noqa: F821
                            model_providers=[dd.ModelProvider(name="fake", endpoint=args.api_base,  # noqa: F821
                                                              api_key="x")])
    result = designer.create(builder, num_records=len(rows))
    print(json.dumps({"answers": len(result.load_dataset())}))


if __name__ == "__main__":
    main()
