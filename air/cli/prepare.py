"""What a run reads and checks before anything exists: the permission policy, the provider.

Owns: ``prepare`` (the ``RuntimeServices`` of a run: the policy files, the redactor, and the
provider ``--cassette DIR``/``--cassette FILE``/``--record``/models.yaml give, with the model
the workers use), ``load_models_checked`` and the checks behind them. Every bad file or option
is an ``AirException`` here, with nothing on disk yet.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from air.cli.options import HeadlessOptions, bad

if TYPE_CHECKING:
    from air.nursery.runtime import RuntimeServices

__all__ = ["load_models_checked", "prepare"]


def prepare(options: HeadlessOptions, project_root: str, *, warm: bool = True) -> RuntimeServices:
    """Read the permission policy and the provider configuration, and pick the model.
    ``warm``: start warming up the provider's connection (not for ``air run --plan``).

    Raises:
        AirException: a bad permissions.yaml / models.yaml / cassette, an unknown
            ``--provider``, or no model configured at all (``config_error`` naming the file
            and field to set).
    """
    from air.nursery.runtime import RuntimeServices

    if options.runner_factory is not None:
        return RuntimeServices()
    from air.llm.manager import ProviderManager
    from air.security.policy import load_policy
    from air.security.redact import SecretRedactor

    redactor = SecretRedactor()
    redactor.register_environment(os.environ)  # values of *_TOKEN, *_API_KEY... (SDD §9.2)
    prepared = RuntimeServices(
        redactor=redactor,
        policy=load_policy(
            [
                os.path.join(os.path.expanduser("~"), ".air", "permissions.yaml"),
                os.path.join(project_root, ".air", "shared", "permissions.yaml"),
            ]
        ),
    )
    if options.cassette and os.path.isdir(options.cassette):
        from air.llm.task_cassettes import TaskCassettes

        directory = os.path.abspath(options.cassette)
        for name in sorted(os.listdir(directory)):
            if name.endswith(".jsonl"):
                _check_cassette(os.path.join(directory, name))
        prepared.provider = TaskCassettes(directory)
    elif options.cassette:
        _check_cassette(os.path.abspath(options.cassette))
        prepared.provider = ProviderManager.for_cassette(os.path.abspath(options.cassette))
    else:
        config = load_models_checked(project_root)
        wanted = options.provider
        if options.model:
            from air.llm.model_choice import with_model

            config = with_model(config, options.model, options.provider)
            wanted = config.default
        manager = ProviderManager(config, redactor=redactor)
        prepared.provider = manager
        prepared.model = _configured_model(manager, wanted)
        _require_key(manager.config, prepared.model)
        prepared.escalation = tuple(manager.config.escalation)
        _refuse_retired(manager.config, (prepared.model, *prepared.escalation))
        prepared.tool_room = manager.tool_room
        if warm:
            manager.warm_up(prepared.model.partition("/")[0])  # now: a thread (IMPL-FAST-3)
        if options.record:
            from air.llm.cassette import TaskRecorder

            prepared.provider = TaskRecorder(manager, options.record, secrets=manager.secrets())
    return prepared


def load_models_checked(project_root: str | None) -> Any:
    """``load_models_config``, with a file that is not UTF-8 or nested too deeply for the YAML
    parser reported as ``config_error`` naming it (the loader lets those through). The project's
    providers are taken only when the user trusted the project (``air.session.trust``).

    Raises:
        AirException(config_error): any bad models.yaml.
        AirException(untrusted_config): project providers the user has not trusted.
    """
    from air.llm.config import load_models_config
    from air.session.trust import trust_scan, trusted

    project_trusted = project_root is not None and trusted(trust_scan(project_root))
    try:
        return load_models_config(project_root, project_trusted=project_trusted)
    except (UnicodeDecodeError, RecursionError) as exc:
        raise _models_file_problem(project_root, exc) from None


def _models_file_problem(project_root: str | None, exc: BaseException) -> Any:
    """The models.yaml that is not UTF-8 or nested too deeply, named (the loader could not)."""
    import yaml

    from air.llm.config import project_models_path, user_models_path
    from air.yamlload import compose

    reason = "not UTF-8 text" if isinstance(exc, UnicodeDecodeError) else "nested too deeply"
    culprit = "models.yaml"
    paths = [user_models_path()]
    if project_root is not None:
        paths.append(project_models_path(project_root))
    for path in paths:
        try:
            with open(path, encoding="utf-8") as handle:
                compose(handle.read())
        except FileNotFoundError:
            continue
        except (UnicodeDecodeError, RecursionError):
            culprit = path
            break
        except (OSError, yaml.YAMLError):
            continue
    return bad(
        "config_error",
        f"{culprit}: file: not valid YAML ({reason})",
        f"Fix {culprit} (see docs/decisions.md IMPL-LLM-2 for the format).",
        file=culprit,
        field="file",
        reason=reason,
    )


def _check_cassette(path: str) -> None:
    """Validate a cassette now, so a bad one is refused before the run starts."""
    from air.llm.cassette import load_cassette

    if not os.path.isfile(path):
        what = "is not a regular file" if os.path.exists(path) else "does not exist"
        raise bad(
            "not_found",
            f"--cassette {path}: {what}",
            "Pass --cassette with a cassette file (.jsonl) or a directory of <task id>.jsonl.",
            file=path,
            field="--cassette",
        )
    try:
        load_cassette(path)
    except (UnicodeDecodeError, ValueError) as exc:
        raise bad(
            "validation_error",
            f"{path}: not a cassette: {exc.__class__.__name__}: not UTF-8 JSON lines",
            "Pass a cassette recorded by air (format: air/llm/schemas/cassette.schema.json).",
            file=path,
            field="--cassette",
        ) from None
    except RecursionError:
        raise bad(
            "validation_error",
            f"{path}: not a cassette: nested too deeply",
            "Pass a cassette recorded by air (format: air/llm/schemas/cassette.schema.json).",
            file=path,
            field="--cassette",
        ) from None


def _configured_model(manager: Any, wanted: str | None) -> str:
    """The ``provider_id/model_id`` the session's workers use, fixed when the run starts.

    ``--provider`` may name a provider (its best fitting model is taken) or a
    ``provider_id/model_id``; without it the models.yaml default (or role pin) applies.

    Raises:
        AirException(config_error): nothing configured fits, with what to put in models.yaml.
    """
    from air.contracts.error import AirException
    from air.contracts.provider import ModelRequirement

    if wanted and "/" in wanted:
        requirement = ModelRequirement(role="executor", model=wanted)
    else:
        requirement = ModelRequirement(role="executor", provider_id=wanted)
    try:
        chosen = manager.select_model(requirement)
    except AirException as exc:
        said = f"{exc.error.message} {exc.user_action or ''}"
        if wanted and not (wanted in said and "models.yaml" in said):
            # the selector's message does not name the --provider value and the file: say it
            _check_provider_flag(manager.config, wanted)
        raise
    return f"{chosen.provider_id}/{chosen.model_id}"


def _refuse_retired(config: Any, refs: tuple[str, ...]) -> None:
    """No task starts on a model its vendor retired (``air.llm.lifecycle``).

    Raises:
        AirException(config_error): the first retired one, with the model to use instead.
    """
    from air.llm.lifecycle import retired_refusal

    for ref in refs:
        refusal = retired_refusal(config, ref)
        if refusal is not None:
            raise refusal


def _require_key(config: Any, model: str) -> None:
    """The key of the model every task starts with is in the environment before anything
    exists: without it each task failed at its first turn, after a session was made.

    Raises:
        AirException(config_error): a variable its provider's ``auth_ref`` or ``header_refs``
            names is unset.
    """
    provider_id = model.partition("/")[0]
    provider = config.providers.get(provider_id)
    if provider is None:
        return
    unset = [(field, ref) for field, ref in provider.credential_refs() if not os.environ.get(ref)]
    if not unset:
        return
    from air.contracts.error import AirException

    field, ref = unset[0]
    raise AirException.of(
        kind="config_error",
        message=f"environment variable {ref} ({field} of {provider_id!r}) is not set: {model} "
        "cannot be called",
        user_action=(
            f"Export {ref}, or pick a configured model whose keys are set with "
            "--model or --provider (`air provider list` shows them)."
        ),
        metadata={"field": f"providers.{provider_id}.{field}"},
    )


def _check_provider_flag(config: Any, wanted: str) -> None:
    """``--provider NAME`` or ``NAME/MODEL`` names something models.yaml configures."""
    provider_id, _, model_id = wanted.partition("/")
    files = " and ".join(config.sources) or "~/.air/models.yaml (there is none)"
    provider = config.providers.get(provider_id)
    reason = None
    if provider is None:
        known = ", ".join(sorted(config.providers)) or "none"
        reason = f"no provider {provider_id!r} in {files} (configured: {known})"
    elif model_id and model_id not in provider.models:
        known = ", ".join(sorted(provider.models)) or "none"
        reason = f"provider {provider_id!r} has no model {model_id!r} in {files} (models: {known})"
    if reason is not None:
        raise bad(
            "config_error",
            f"--provider {wanted}: {reason}",
            "Pass --provider with a provider (or provider/model) from `air provider list`, "
            "or add it to ~/.air/models.yaml.",
            field="--provider",
            reason=reason,
        )
