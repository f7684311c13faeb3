-- Argo CD health of an agents.ctxmesh.ai FeedbackStore, from the conditions the status
-- writer (feedbackstore-webhook) and the platform's operator keep on it.
--
-- The verdict: `Stalled` (the writer's own, kstatus' abnormal-true convention:
-- True/InvalidSpec names every problem), else `Validated` (True/SpecCoherent, or
-- False/InvalidSpec: the writer's names every problem, the platform's only the first).
-- A verdict counts only for the generation it was computed for (the condition's
-- observedGeneration): one for an older spec, or none yet, is Progressing until the
-- writer catches up.
-- Deleting: Argo CD says "Pending deletion" before any script runs; run alone, this one
-- names the agents an in-use store waits on.
local hs = {}

local function condition(kind)
  if obj.status == nil or obj.status.conditions == nil then
    return nil
  end
  for _, c in ipairs(obj.status.conditions) do
    if c.type == kind then
      return c
    end
  end
  return nil
end

local generation = obj.metadata.generation

local function current(c)
  return c ~= nil and (c.observedGeneration == nil or generation == nil
    or c.observedGeneration == generation)
end

if obj.metadata.deletionTimestamp ~= nil then
  local inUse = condition("InUse")
  hs.status = "Progressing"
  if inUse ~= nil and inUse.status == "True" then
    hs.message = inUse.message
  else
    hs.message = "Pending deletion"
  end
  return hs
end

local stalled = condition("Stalled")
local validated = condition("Validated")
if current(stalled) and stalled.status == "True" then
  hs.status = "Degraded"
  hs.message = stalled.message
  return hs
end
if current(stalled) and stalled.status == "False" then
  hs.status = "Healthy"
  hs.message = stalled.message
  return hs
end
-- A problem found for this spec, whoever wrote it (the platform's rules are a subset of ours).
if current(validated) and validated.status == "False" then
  hs.status = "Degraded"
  hs.message = validated.message
  return hs
end
-- Coherent by a writer that keeps no Stalled (the platform's operator alone, an older writer).
if stalled == nil and current(validated) and validated.status == "True" then
  hs.status = "Healthy"
  hs.message = validated.message
  return hs
end

hs.status = "Progressing"
local seen = stalled or validated
if seen ~= nil and seen.observedGeneration ~= nil and not current(seen) then
  hs.message = "verdict for generation " .. seen.observedGeneration .. ", spec is generation "
    .. generation .. ": waiting for the status writer"
else
  hs.message = "no verdict yet: waiting for the status writer"
end
return hs
