"""Why a proposed change is safe: it parses, a second run changes nothing, the diff stays in
the targeted classes (`safety`), and every changed module imports in the sandbox
(`import_check` drives `import_probe`, the warm interpreter inside it; `fd_wait` polls).

Modules import each other directly (never through this package), so importing one module
never runs the others.
"""
