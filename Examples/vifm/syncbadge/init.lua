--[[ SyncBadge for vifm: a column with each entry's sync badge (glyph, and progress while
syncing), live.

vifmrc (README.md next to this directory):
    let $SYNCBADGE_VIFM_SERVER = v:servername
    plugin load
    set viewcolumns=-{name}..,6{SyncBadge},7{size}

A column handler must not block, so this plugin never talks to the daemon itself: it starts
syncbadge-vifm (next to this file) as a job, writes to the job's stdin each directory vifm
shows, and reads the cache files the helper keeps. The helper asks vifm to run
`syncbadgereload` and `redraw` (through --remote and the server name) whenever a file changed;
the files are read again then. ]]

local M = {}

local helper = vifm.plugin.path .. "/syncbadge-vifm"
local job = nil
local cachedir = nil
local asked = {}    -- location -> true: sent to the helper since the last reload
local loaded = {}   -- location -> { name -> column text }, or false: no cache file (yet)

local function quote(s)
    return "'" .. s:gsub("'", "'\\''") .. "'"
end

-- The helper's cache_name(): a 32-bit djb2 hash of the directory's path.
local function cachename(location)
    local h = 5381
    for i = 1, #location do
        h = (h * 33 + location:byte(i)) % 4294967296
    end
    return string.format("%08x.tsv", h)
end

local function decode(s)
    return (s:gsub("%%(%x%x)", function(hex) return string.char(tonumber(hex, 16)) end))
end

local function start()
    local runtime = vifm.expand("$XDG_RUNTIME_DIR")
    if runtime:sub(1, 1) ~= "/" then
        runtime = "/tmp"
    end
    cachedir = string.format("%s/syncbadge-vifm-%d-%d", runtime, os.time(), math.random(1, 1000000000))
    -- The job's stdin closes when vifm exits, and the helper with it. Its messages go to a log
    -- file: vifm would show a job's error output in a dialog.
    local ok, started = pcall(vifm.startjob, {
        cmd = "exec " .. quote(helper) .. " --cache " .. quote(cachedir) .. " 2>>" .. quote(runtime .. "/syncbadge-vifm.log"),
        iomode = "w",
        description = "SyncBadge column",
    })
    if ok then
        job = started
    else
        print("syncbadge: cannot start " .. helper .. ": " .. tostring(started))
    end
end

local function request(location)
    if job == nil then
        return
    end
    local ok = pcall(function()
        local input = job:stdin()
        input:write(location, "\n")
        input:flush()
    end)
    if not ok then
        job = nil   -- the helper is gone: the column stays empty
    end
end

local function load(location)
    local f = io.open(cachedir .. "/" .. cachename(location), "rb")
    if f == nil then
        return false
    end
    local entries = false
    if f:read("l") == location then
        entries = {}
        for line in f:lines() do
            local name, text = line:match("^([^\t]*)\t(.*)$")
            if name ~= nil then
                entries[decode(name)] = text
            end
        end
    end
    f:close()
    return entries
end

vifm.cmds.add {
    name = "syncbadgereload",
    description = "read the SyncBadge column's cache again (the helper runs it)",
    handler = function()
        loaded = {}
        asked = {}
    end,
}

vifm.addcolumntype {
    name = "SyncBadge",
    handler = function(info)
        local location = info.entry.location
        if not asked[location] then
            asked[location] = true
            request(location)
        end
        local entries = loaded[location]
        if entries == nil then
            entries = load(location)
            loaded[location] = entries
        end
        return { text = entries and entries[info.entry.name] or "" }
    end,
}

start()

return M
