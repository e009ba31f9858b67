"""Several servers, one run: an `LLMEngine` whose requests go through a `litellm.Router`.

The Router picks a deployment per request with usage-based routing (`usage-based-routing-v2`, which honours each
deployment's rpm/tpm; least-busy would ignore them) and rests a failing server for a while (its cooldown). It
retries nothing itself (`num_retries=0`, no fallbacks): a failure comes back to our explicit retries, which send it
again through the Router (so usually to another server). The run configuration and the cache key name the model
and the set of the deployments' models, never their addresses.
"""
from __future__ import annotations

import asyncio
import os
from typing import TYPE_CHECKING, Any

from injector.util.errors import UserError
from injector.engines.limits import RateLimiter
from injector.util.redaction import public_host, register_secret
from injector.engines.base import Proposal, TransientProviderError
from injector.engines.deployments import Deployment, DeploymentSet
from injector.engines.deployments import from_api_bases, load_deployments
from injector.engines.model_info import UnroutableModel, environment_status, listed_prices, per_token, takes_schema
from injector.engines.llm import (
    PLACEHOLDER_KEY,
    LLMEngine,
    _text_tokens_estimate,
    classify_provider_error,
    import_litellm,
)

if TYPE_CHECKING:
    from injector.engines.settings import EngineSettings

ROUTING_STRATEGY = "usage-based-routing-v2"
"""litellm's routing that keeps each deployment under its own rpm/tpm (checked against litellm 1.110's router)."""


class RouterEngine(LLMEngine):
    """Sends each request through a `litellm.Router` over `deployments`; everything else is `LLMEngine`'s."""

    def __init__(self, deployments: DeploymentSet, *, model: str | None = None, **options: Any):
        group = model or deployments.model or _single_model(deployments)
        super().__init__(group, **options, client="litellm")  # the Router is litellm's
        self.deployments = deployments
        self._model_list: list[dict[str, Any]] | None = None
        self._router: Any = None
        self._router_loop: Any = None

    @classmethod
    def limiter_for(cls, deployments: DeploymentSet, rpm: float | None, tpm: float | None) -> RateLimiter:
        """The run-wide limiter: `--rpm/--tpm` when given, else the deployments' sum (when every one has a limit),
        so the run does not send faster than the Router can place requests."""
        if rpm is None and all(d.rpm for d in deployments.deployments):
            rpm = sum(d.rpm or 0 for d in deployments.deployments)
        if tpm is None and all(d.tpm for d in deployments.deployments):
            tpm = sum(d.tpm or 0 for d in deployments.deployments)
        return RateLimiter(rpm, tpm)

    def describe(self) -> dict[str, Any]:
        return {**super().describe(), "deployment_models": self.deployments.models}

    def servers(self) -> list[dict[str, Any]]:
        """The deployments as the manifest records them (hosts and variable names, never keys)."""
        return [d.public() for d in self.deployments.deployments]

    def check_ready(self) -> None:
        """Each deployment's key: its `api_key_env` must be set; without one, a server gets a placeholder key and a
        provider the key litellm finds in the environment (or a one-line error naming the variable)."""
        litellm = import_litellm()
        model_list = []
        for deployment in self.deployments.deployments:
            params: dict[str, Any] = {"model": deployment.model, "max_retries": 0}
            if deployment.api_base:
                params["api_base"] = deployment.api_base
            key = self._key(litellm, deployment)
            if key:
                params["api_key"] = key
            for name in ("rpm", "tpm"):
                if getattr(deployment, name):
                    params[name] = int(getattr(deployment, name))
            model_list.append({"model_name": self.model, "litellm_params": params})
        self._model_list = model_list

    def _router_of_this_loop(self) -> Any:
        """The Router, made inside the running event loop: its usage-based routing starts a task on the loop it
        finds (made outside one, it would set up a loop of its own that never runs), so each `asyncio.run` of the
        engine gets its own, and its counters start afresh."""
        loop = asyncio.get_running_loop()
        if self._router is None or self._router_loop is not loop:
            if self._model_list is None:
                self.check_ready()
            litellm = import_litellm()
            known = set(litellm.model_cost)
            self._router = litellm.Router(
                model_list=self._model_list, routing_strategy=ROUTING_STRATEGY, num_retries=0, max_fallbacks=0,
                retry_after=0, allowed_fails=self.deployments.allowed_fails,
                cooldown_time=self.deployments.cooldown_seconds,
            )
            # The Router registers each unknown deployment model in litellm's price list with no price, which
            # litellm's model info then reads as free (0 per token): an unknown price must stay unknown, in this run and
            # in any later one in the process.
            for name in set(litellm.model_cost) - known:
                del litellm.model_cost[name]
            self._router_loop = loop
        return self._router

    @staticmethod
    def _key(litellm: Any, deployment: Deployment) -> str | None:
        if deployment.api_key_env:
            key = os.environ.get(deployment.api_key_env)
            if not key:
                raise UserError(f"{deployment.origin}: the environment variable {deployment.api_key_env} is not set; "
                                f"export it with the key of {deployment.model}")
            register_secret(key)  # redacted wherever it might surface, whatever the variable is called
            return key
        try:
            status = environment_status(deployment.model, deployment.api_base)
        except UnroutableModel as exc:
            raise UserError(f"{deployment.origin}: {exc}") from None
        missing = status.get("missing_keys") or []
        if not missing:
            return None
        if deployment.api_base:
            return PLACEHOLDER_KEY  # local servers ignore the key, but the openai client insists on one
        raise UserError(f"{deployment.origin}: no API key for {deployment.model!r}: set {' and '.join(missing)}, "
                        "or name the variable that holds it with `api_key_env`")

    def prices(self) -> tuple[float, float] | None:
        """The dearest deployment's prices (a budget must hold whichever server answers), or None if one is
        unknown; `--price-in/--price-out` win."""
        if given := per_token(self.price_in, self.price_out):
            return given
        found = []
        for model in self.deployments.models:
            prices = listed_prices(model)
            if prices is None:
                return None
            found.append(prices)
        return max(p for p, _ in found), max(c for _, c in found)

    def count_tokens(self, messages: list[dict[str, Any]]) -> int:
        return int(import_litellm().token_counter(model=self.deployments.models[0], messages=messages))

    def count_text_tokens(self, text: str) -> int:
        return int(import_litellm().token_counter(model=self.deployments.models[0], text=text))

    def sends_schema(self) -> bool:
        """Only when every deployment's model takes a JSON-schema response_format."""
        return self.use_schema and all(takes_schema(model) for model in self.deployments.models)

    def request(self, messages: list[dict[str, Any]], seed: int, schema: dict | None, name: str) -> dict[str, Any]:
        """`LLMEngine.request` plus the set of the deployments' models (in the cache key; not sent)."""
        return {**super().request(messages, seed, schema, name), "deployment_models": self.deployments.models}

    async def _complete_once(self, request: dict[str, Any]) -> Proposal:
        litellm = import_litellm()
        router = self._router_of_this_loop()
        sent = {name: value for name, value in request.items() if name != "deployment_models"}
        await self.limiter.before_request(_text_tokens_estimate(sent["messages"]))
        try:
            # litellm's timeout restarts with every byte read: the deadline of the whole answer is ours.
            response = await asyncio.wait_for(router.acompletion(**sent, timeout=self.timeout, drop_params=True,
                                                                 max_retries=0), self.timeout)
        except asyncio.TimeoutError:
            raise TransientProviderError(f"no complete answer within {self.timeout:g} s (timeout)") from None
        except Exception as exc:  # noqa: BLE001 - every litellm exception is classified (and redacted) here
            raise self._refused(exc, classify_provider_error(litellm, exc)) from exc
        hidden = getattr(response, "_hidden_params", None) or {}
        return await self._litellm_proposal(litellm, response, {"deployment": _host(hidden.get("api_base"))})


def _host(api_base: Any) -> str | None:
    return public_host(str(api_base)) if api_base else None


def from_settings(settings: EngineSettings) -> RouterEngine:
    """The `router` kind's factory (`registry.py`): the deployments file's servers, or one per `api_base`."""
    if settings.deployments is not None:
        servers = load_deployments(settings.deployments)
    else:
        assert settings.model is not None  # the settings' validation asks several api bases for a model
        servers = from_api_bases(settings.model, list(settings.api_bases))
    return RouterEngine(servers, model=settings.model,
                        limiter=RouterEngine.limiter_for(servers, settings.rpm, settings.tpm),
                        **settings.llm_options())


def _single_model(deployments: DeploymentSet) -> str:
    models = deployments.models
    if len(models) != 1:
        raise UserError(f"the deployments serve several models ({', '.join(models)}): name the run's model with "
                        "--model NAME (or `model:` at the top of the deployments file)")
    return models[0]
