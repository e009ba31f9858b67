"""A plugin with a bug: importing it fails."""
raise ImportError("this plugin needs a library that is not installed")
