"""A third-party engine kind, `echo-first`: the repeat-step engine, always repeating the first step."""
from injector.engines.registry import EngineKind
from injector.engines.repeat_step import RepeatStepEngine


class EchoFirstEngine(RepeatStepEngine):
    name = "echo-first"

    def describe(self):
        return {"engine": self.name, "model": self.name, "api_base_host": None}


KIND = EngineKind("echo-first", "repeats the first step (a test plugin)", lambda settings: EchoFirstEngine())
