#!/bin/sh
# A hook is executable content: changing it changes the pack digest, so a signed pack cannot
# have its hooks swapped after release.
echo "tool call audited" >&2
