"""`Category` and `Taxonomy`: the error categories, their templates and the rules their validator enforces.

A taxonomy is a YAML file (or built in Python). Template and hook paths are relative to the file that names them
and must resolve (symlinks followed) inside its directory or the bundled `prompts/`; `extends: <bundled name>`
starts from a bundled taxonomy and overrides or adds categories by id.

A run directory records the taxonomy it was made with; `run_taxonomy` loads that one for its rules only (hooks
off), since a run directory may come from someone else: only a taxonomy named on the command line runs code.
"""
from injector.taxonomy.loading import resolve_taxonomy
from injector.taxonomy.models import Category, ExampleAnswer, Rules, Taxonomy, WorkedExample
from injector.taxonomy.recorded import run_taxonomy

__all__ = ["Category", "ExampleAnswer", "Rules", "Taxonomy", "WorkedExample", "resolve_taxonomy", "run_taxonomy"]
