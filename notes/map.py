"""Every snippet of the notes → the catalogue ID it shows, or "context", and its class.

Keyed by a stable locator, the note file's prefix and the snippet's index in that file
("003#7": the eighth fenced block of 003_*.txt), with the snippet's first non-blank line as a
guard: an edited note moves or changes snippets, and `tests/unit/cases/_lib/test_snippets.py` then names every
entry that no longer matches (and every snippet without an entry).

``cls``: the snippet's class (`snippets.CLASSES`) where its text alone does not tell it
(`snippets.class_of_text` decides otherwise): an excerpt of a library's source with no docstring
marks, an argument-list sketch. Only ``code`` is run as the notes' code.

``runs``: whether a code snippet is run on a CPU, top to bottom as pasted, in the note's
namespace (the names the notes defined before it, and `snippets.SEED_IMPORTS`); ``reason`` says
why not where it is not: it needs a GPU, a multi-process or distributed launch, a file, dataset,
download or package it does not provide, or a name the notes define but give no value. A name
the notes never define is no reason: the snippet runs and fails with NameError as written.
``needs``: (name, "file:line") for each name it takes from the notes that the run cannot have:
where the notes define it (a snippet not run here) or declare it in words ("# x 为输入数据").
``elsewhere``: (line, who) for lines of it a case judges itself (a claim, or the case's own
erratum): listed in the evidence, never a second erratum. ``requires``: packages a runnable
snippet needs (skipped, with the reason, where one is not installed). ``claim``: the claim of the
case it shows, where the case module declares one (`Case.claims`); None otherwise.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

CONTEXT = "context"  # not a technique of the catalogue (plain Python, tools, output listings)


@dataclass(frozen=True)
class Entry:
    id: str
    first: str  # the snippet's first non-blank line, stripped: the guard
    runs: bool
    reason: str = ""
    needs: tuple[tuple[str, str], ...] = ()
    claim: str | None = None
    requires: tuple[str, ...] = ()
    cls: str | None = None
    elsewhere: tuple[tuple[str, str], ...] = ()

    def __post_init__(self):
        if not self.runs and not self.reason:
            raise ValueError(f"{self.first!r}: a snippet that is not run says why")
        for need in self.needs:
            if not (isinstance(need, tuple) and len(need) == 2 and ":" in need[1]):
                raise ValueError(f"{self.first!r}: a need is (name, 'file:line'), got {need!r}")

    @property
    def need_names(self) -> tuple[str, ...]:
        return tuple(name for name, _ in self.needs)


def template(names: str) -> str:
    """Why a code fragment is not run: it stands for code the reader writes around it, with
    placeholders the notes never define (no slip: nothing in the notes says what they are). It is
    still read statically, so a slip inside it (a misspelled name) is an erratum."""
    return f"a template, not code to paste: {names} placeholders the notes never define"


GUARD_PREFIX = 40  # a guard this long may be the start of a longer first line (a JSON literal, a command)


def guard_matches(entry: Entry, first_line: str) -> bool:
    """The entry still names this snippet: its guard is the snippet's first non-blank line."""
    if entry.first == first_line:
        return True
    return len(entry.first) >= GUARD_PREFIX and first_line.startswith(entry.first)


NOT_COMPILED = "does not compile (its erratum)"
NOT_PYTHON = "not Python: counted, never run"

# The RNN, Multi-GPU, dataset, tensorboard, STN and distance snippets of 000 reappear in 001.
SHOWN = "shown as what it is, not the notes' code"  # the classes other than code
_SHARED = {
    "rnn_constants": Entry("rnn.timestep_loop", "TIME_STEP = 28", True),
    # nn.LSTM's arguments listed by name, one comment each, inside a class body never shown.
    "rnn_lstm": Entry("rnn.timestep_loop", "self.rnn = nn.LSTM(", False, SHOWN, cls="pseudo"),
    "rnn_forward": Entry("rnn.timestep_loop", "# 网络相同", True),
    "rnn_train": Entry("rnn.hidden_detach", "h_state = None      # for initial hidden state", True),
    "binarized": Entry("autograd.custom_function", "class BinarizedF(Function):", True),
    "cuda1": Entry(
        CONTEXT,
        'cuda1 = torch.device("cuda:1")',
        False,
        "needs a second CUDA device",
    ),
    "dist_spawn": Entry(
        "parallel.average_gradient",
        "# setup environment",
        False,
        "a distributed launch: its __main__ block spawns 4 ranks (mp.spawn); average_gradient needs a "
        "process group",
    ),
    "dist_tcp": Entry(
        "dist.setup",
        "import torch.distributed as dist",
        False,
        "a distributed launch (nccl, a rank per host, command-line arguments) over CIFAR-10 (torchvision, "
        "a download); `Net`, `transform`, `batch_size` are elided (# ......)",
    ),
    "dist_env": Entry(
        "dist.setup",
        "import torch.distributed as dist",
        False,
        "a distributed launch (nccl, env:// from torch.distributed.launch, --local_rank) over CIFAR-10 "
        "(torchvision, a download); `Net`, `transform`, `batch_size` are elided (# ......)",
    ),
    "dist_launch_cmd": Entry(
        "dist.setup",
        "python -m torch.distributed.launch --nproc_per_node=2 --nnodes=3 --node_rank=0 "
        '--master_addr="192.168.1.201" --master_port=23456 env_init.py',
        False,
        NOT_PYTHON,
    ),
    "mydataset": Entry("data.loading", "class MyDataSet(Dataset):", False, NOT_COMPILED),
    "tensorboard_vis": Entry(
        "misc.tensorboard",
        "from torch.utils.tensorboard import SummmaryWritter",
        True,
        requires=("tensorboard",),
    ),
    "stn": Entry(
        "nn.grid_sample",
        "# x 为输入数据",
        False,
        "needs `x`, which the notes declare in words (the input data) but give no value",
        claim="stn",
    ),
    "distance": Entry(
        "distance.pairwise",
        "# des_tar , des_cur 代表两帧的描述子 N*256",
        False,
        "needs `des_tar` and `des_cur`, which the notes declare in words (two frames' N*256 descriptors) "
        "but give no value; the case runs its lines on its own descriptors",
    ),
}
_S = _SHARED

SNIPPETS: dict[str, Entry] = {
    # ---- 000 -----------------------------------------------------------------------------------
    "000#0": _S["rnn_constants"],
    "000#1": _S["rnn_lstm"],
    "000#2": _S["rnn_forward"],
    "000#3": _S["rnn_train"],
    "000#4": _S["binarized"],
    "000#5": _S["cuda1"],
    "000#6": _S["dist_spawn"],
    "000#7": _S["dist_tcp"],
    "000#8": _S["dist_env"],
    "000#9": _S["dist_launch_cmd"],
    "000#10": _S["mydataset"],
    "000#11": _S["tensorboard_vis"],
    "000#12": replace(_S["stn"], needs=(("x", "000:312"),)),
    "000#13": replace(_S["distance"], needs=(("des_tar", "000:328"), ("des_cur", "000:328"))),
    # ---- 001 -----------------------------------------------------------------------------------
    "001#0": _S["rnn_constants"],
    "001#1": _S["rnn_lstm"],
    "001#2": _S["rnn_forward"],
    "001#3": _S["rnn_train"],
    "001#4": _S["binarized"],
    "001#5": Entry(
        "autograd.hooks",
        "def printnorm(self, input, output):",
        False,
        template("`net` (with a conv2)"),
        elsewhere=(("net.conv2.register_backward_hook(printgrad)", "autograd.hooks' own erratum"),),
    ),
    "001#6": Entry(
        "optim.param_groups",
        "model = torchvision.models.resnet18(pretrained=True)",
        False,
        "needs torchvision and a download of pretrained weights (network)",
    ),
    "001#7": _S["cuda1"],
    "001#8": _S["dist_spawn"],
    "001#9": _S["dist_tcp"],
    "001#10": _S["dist_env"],
    "001#11": _S["dist_launch_cmd"],
    "001#12": _S["mydataset"],
    "001#13": _S["tensorboard_vis"],
    "001#14": Entry(CONTEXT, "class Net(nn.Module):", True),
    # torch 1.x's torch.nn.utils.clip_grad_norm_, quoted (its docstring marks it).
    "001#15": Entry(
        "clip.grad_norm", "def clip_grad_norm_(parameters, max_norm, norm_type=2):", False, SHOWN
    ),
    "001#16": Entry(
        "optim.param_groups",
        "# freeze those parameters",
        False,
        "needs `model`, defined by 001#6 (a pretrained resnet18: torchvision, a download), not run here",
        needs=(("model", "001:129"),),
    ),
    # `net` is any network with an fc2 (001#14's has none): pasted after it, it crashes on a name
    # the fragment never meant.
    "001#17": Entry(
        "optim.param_groups",
        "# freeze fc2 layer weight",
        False,
        template("`net` (with an fc2)"),
    ),
    "001#18": Entry(
        "optim.param_groups",
        "class Model(nn.Module):",
        True,
        elsewhere=(
            ("m.weight.fill_(1.0)", "the failing claim optim.param_groups apply_init"),
            ("tirch.nn.init.xavier_uniform_(m.weight)", "optim.param_groups' own erratum"),
        ),
    ),
    "001#19": Entry("optim.param_groups", "# given a function, and applies it to all submodules", True),
    # torch 1.x's torch/nn/modules/batchnorm.py, quoted in three pieces.
    "001#20": Entry("train.modes", "class _NormBase(Module):", False, SHOWN),
    "001#21": Entry("train.modes", "def reset_running_stats(self) -> None:", False, SHOWN),
    "001#22": Entry("train.modes", "def _check_input_dim(self, input):", False, SHOWN),
    "001#23": Entry("conv.im2col", "unfold = nn.Unfold(kernel_size=(2,3))", True),
    "001#24": Entry("optim.param_groups", "[", False, NOT_PYTHON),
    "001#25": Entry("optim.param_groups", "def add_param_group(self, param_group):", False, SHOWN),
    "001#26": Entry(
        "optim.scheduler_resume",
        "KeyError: \"param 'initial_lr' is not specified in param_groups[0] when resuming an optimizer\"",
        False,
        NOT_PYTHON,
    ),
    # torch 1.x's torch/optim/lr_scheduler.py: _LRScheduler.__init__ and LambdaLR.get_lr.
    "001#27": Entry("optim.scheduler_resume", "class _LRScheduler(object):", False, SHOWN, cls="source"),
    "001#28": Entry("optim.scheduler_resume", "def get_lr(self):", False, SHOWN, cls="source"),
    "001#29": Entry(
        "optim.scheduler_resume",
        "chkpt = {'epoch': epoch,",
        False,
        template("`epoch`, `model`, `optimizer`"),
    ),
    "001#30": Entry(
        "nn.grid_sample",
        "torch.nn.functional.grid_sample(input, grid, mode='bilinear', padding_mode='zeros', "
        "align_corners=None)",
        False,
        NOT_PYTHON,
    ),
    "001#31": replace(_S["stn"], needs=(("x", "001:859"),)),
    "001#32": replace(_S["distance"], needs=(("des_tar", "001:885"), ("des_cur", "001:885"))),
    "001#33": Entry(
        "onehot.encode",
        "# label (B, )",
        False,
        "needs `label`, which the notes declare in words (labels of shape (B,)) but give no value",
        needs=(("label", "001:903"),),
    ),
    # ---- 002 -----------------------------------------------------------------------------------
    "002#0": Entry("data.loading", "def data_iter(batch_size, features, labels):", True),
    "002#1": Entry(
        CONTEXT, "from torchsummary import summary", True, requires=("torchsummary", "torchvision")
    ),
    "002#2": Entry(
        CONTEXT, "----------------------------------------------------------------", False, NOT_PYTHON
    ),
    "002#3": Entry("parallel.manual_dp", "def get_params(params, device):", True),
    "002#4": Entry("parallel.allreduce", "def allreduce(data):", True),
    "002#5": Entry(
        "parallel.manual_dp",
        "data = torch.arange(20).reshape(4, 5)",
        False,
        "needs two CUDA devices (cuda:0, cuda:1)",
    ),
    "002#6": Entry("parallel.manual_dp", "input : tensor([ [ 0,  1,  2,  3,  4],", False, NOT_PYTHON),
    "002#7": Entry("parallel.manual_dp", "def split_batch(X, y, devices):", True),
    "002#8": Entry("parallel.manual_dp", "def train_batch(X, y, device_params, devices, lr):", True),
    "002#9": Entry("parallel.manual_dp", "def train(num_gpus, batch_size, lr):", True),
    "002#10": Entry("parallel.dp_vs_ddp", "def train(net, num_gpus, batch_size, lr):", True),
    # ---- 003 -----------------------------------------------------------------------------------
    "003#0": Entry("train.modes", "model = nn.Sequential(nn.Dropout(0.3))", True),
    "003#1": Entry("shape.ops", "x = torch.tensor([1, 2, 3])", True),
    "003#2": Entry(
        "state.save_load",
        "class MyModule(torch.nn.Module):",
        True,
        elsewhere=tuple(
            (line, "jit.script_trace's own deprecation erratum")
            for line in (
                "scripted = torch.jit.script(my_model)",
                'scripted.save("yy.pt")',
                "torch.jit.load('yy.pt')",
            )
        ),
    ),
    "003#3": Entry(
        "precision.tf32",
        "# The flag below controls whether to allow TF32 on matmul. This flag defaults to True.",
        True,
    ),
    "003#4": Entry(
        "dist.setup",
        "CUDA_VISIBLE_DEVICES=0,1,2,3,4,5,6,7 python -m torch.distributed.launch --nproc_per_node=8 "
        "--nnodes=1 --node_rank=0 --master_addr 127.0.0.1 --master_port 29500 train.py",
        False,
        NOT_PYTHON,
    ),
    # torch 1.6's torch/distributed/launch.py, quoted.
    "003#5": Entry(
        "dist.setup",
        "from __future__ import absolute_import, division, print_function, unicode_literals",
        False,
        SHOWN,
        cls="source",
    ),
    "003#6": Entry(
        "jit.script_trace",
        "# my_model是一个torch.nn.Module子类的对象",
        True,
        elsewhere=(
            ("traced_model = torch.jit.trace(my_model, input_example)", "jit.script_trace's own erratum"),
        ),
    ),
    "003#7": Entry("jit.script_trace", "class MyDecisionGate(torch.nn.Module):", True),
    # 003#0's `model` (a Dropout alone) is not the model this loop means.
    "003#8": Entry(
        "precision.amp",
        "use_amp = True",
        False,
        template("`net`, `data`, `targets`, `loss_fn`, `epochs`"),
    ),
    "003#9": Entry(
        "precision.amp", "scaler = torch.cuda.amp.GradScaler()", False, "needs CUDA (device='cuda:0')"
    ),
    # torch's torch/cuda/amp/grad_scaler.py (torch/amp/grad_scaler.py now), quoted.
    "003#10": Entry("precision.amp", "class OptState(Enum):", False, SHOWN, cls="source"),
    "003#11": Entry("precision.amp", "__init__:    -> READY", False, NOT_PYTHON),
    # "摘录自yolov5" (003:336): yolov5's train.py, quoted without its imports.
    "003#12": Entry(
        "optim.param_groups", "# model is a instanse of torch.nn.Module", False, SHOWN, cls="source"
    ),
    "003#13": Entry("data.recordio", "<dataname>.rec", False, NOT_PYTHON),
    "003#14": Entry("data.recordio", "<第一条数据的byte数><第一条数据的实际内容>", False, NOT_PYTHON),
    "003#15": Entry(
        "data.recordio",
        "record = mx.recordio.MXRecordIO('tmp.rec', 'w')",
        False,
        "needs mxnet (`mx`), not a dependency of the suite (the case reads and writes the format itself)",
    ),
    "003#16": Entry("data.recordio", "data.idx", False, NOT_PYTHON),
    "003#17": Entry("data.recordio", "1\t0", False, NOT_PYTHON),
    "003#18": Entry(
        "data.recordio",
        "record = mx.recordio.MXRecordIO(\"data.rec\", 'r')",
        False,
        "needs mxnet (`mx`) and a data.rec file it does not create",
    ),
    "003#19": Entry("data.recordio", "8byte 5760byte", False, NOT_PYTHON),
    # An interactive session: its last line, `record_3`, is read_idx(3)'s echoed output.
    "003#20": Entry(
        "data.recordio",
        "for i in range(5):",
        False,
        "an interactive session (its last line is the echoed output); needs mxnet",
        cls="transcript",
    ),
    "003#21": Entry("data.recordio", "pack(header, s) -> s", False, SHOWN),
    # mxnet's python/mxnet/recordio.py, quoted.
    "003#22": Entry(
        "data.recordio",
        "IRHeader = namedtuple('HEADER', ['flag', 'label', 'id', 'id2'])",
        False,
        SHOWN,
        cls="source",
    ),
    # ---- 004 -----------------------------------------------------------------------------------
    "004#0": Entry(
        "misc.tensorboard",
        "from torch.utils.tensorboard import SummaryWriter",
        True,
        requires=("tensorboard",),
    ),
    "004#1": Entry("misc.tensorboard", "tensorboard --logdir=runs", False, NOT_PYTHON),
    "004#2": Entry("memory.checkpoint", "from torch.utils.checkpoint import checkpoint", True),
    "004#3": Entry(CONTEXT, "for idx,value in enumarate(lt):", False, NOT_COMPILED),
    "004#4": Entry(
        "data.loading",
        "for batch,(X,y) in enumerate(dataloader):",
        False,
        template("`dataloader`"),
    ),
    "004#5": Entry(CONTEXT, "a[0::2] //", False, SHOWN),
    # A transcript: replayed, what it prints compared as context (the broadcast case judges it).
    "004#6": Entry("broadcast.rules", ">>> a = np.array([0.0, 10.0, 20.0, 30.0])", True),
    "004#7": Entry("layernorm.manual", "# step by step LayerNorm", False, NOT_COMPILED),
    "004#8": Entry("nn.containers", "class net1(nn.Module):#ModuleList", False, NOT_COMPILED),
    "004#9": Entry("onehot.encode", "# Normal embedding", False, NOT_COMPILED),
    "004#10": Entry("attention.masked", "def subsequent_mask(size):", True),
    "004#11": Entry("attention.masked", "# tensor.masked_fill(mask,value)", False, NOT_COMPILED),
    "004#12": Entry(CONTEXT, "a = [1,2,3]", True),
    "004#13": Entry(CONTEXT, "conda update -n base conda        //update最新版本的conda", False, NOT_PYTHON),
    "004#14": Entry(CONTEXT, "sys.argv //表示命令行参数的数组", False, SHOWN),
    "004#15": Entry("onehot.encode", "label = torch.tensor([0,1,0,2,3,2]).view(len(label),-1)", True),
    # scatter_'s index formula from torch's docs: `self`, `index`, `src`, `i`, `j`, `k` stand for any.
    "004#16": Entry(
        "onehot.encode",
        "self[index[i][j][k]][j][k] = src[i][j][k]  # if dim == 0",
        False,
        SHOWN,
        cls="pseudo",
    ),
    "004#17": Entry(CONTEXT, 'dir = "/Users/sirius/Desktop" # 也可以是 /Users/sirius/Desktop/', True),
    "004#18": Entry("layout.contiguous", "a = torch.range(12).reshape(3,4)", True),
    # TH's C source (torch's own, before ATen), quoted.
    "004#19": Entry(
        "layout.contiguous", "int THTensor(isContiguous)(const THTensor *self)", False, SHOWN, cls="source"
    ),
    "004#20": Entry("layout.contiguous", "def isContiguous(tensor):", False, NOT_COMPILED),
    "004#21": Entry(
        CONTEXT, 'x = re.match(r"^([\\w\\.\\-]+)\\s+.+\\s+([0-9]+)\\s+([0-9e\\-\\.]+)\\s+[0-9]+$",s)', True
    ),
    "004#22": Entry(
        CONTEXT, 'file = "./chain_set.json"', False, "reads ./chain_set.json, a file it does not create"
    ),
    "004#23": Entry(
        "train.grad_accumulation",
        "def MinibatchAccumulation(traindata,labels,epochoptimizer,criterion,net):",
        True,
    ),
    "004#24": Entry(
        CONTEXT, '{"test": ["1bct.A", "1bf0.A", "1bjx.A", "1cyu.A", "1ehs.A", "1faf.A",', False, SHOWN
    ),
    "004#25": Entry(CONTEXT, 'file = ""', False, "opens a file (named '') it does not create"),
    "004#26": Entry(CONTEXT, '{"cath_nodes": {"2fyz.A": ["1.20.5"], "1v5j.A": ["2.60.40"],', False, SHOWN),
    "004#27": Entry(
        CONTEXT, 'file1 = "./chain_set.jsonl"', False, "reads ./chain_set.jsonl, a file it does not create"
    ),
    "004#28": Entry(CONTEXT, "from argparse import ArgumentParser", False, NOT_COMPILED),
    "004#29": Entry(
        CONTEXT,
        'parser.add_argument("square", help="display a square of a given number",type=int)',
        False,
        "needs `parser`, which only 004#28 defines, and 004#28 does not compile",
        needs=(("parser", "004:954"),),
    ),
    "004#30": Entry("misc.sampling_ops", "nansum()", False, SHOWN),
    "004#31": Entry(
        "data.loading", "DataLoader(dataset, batch_size=1, shuffle=False, sampler=None,", False, SHOWN
    ),
    "004#32": Entry(
        "dist.setup",
        "import torch.multiprocessing as mp # a wrapper around python's native multiprocessing",
        False,
        "a distributed launch (mp.spawn, nccl) of a model and dataset never defined",
        cls="code",  # its ddp_setup docstring has an "Arguments:" section, yet it is the notes' recipe
        elsewhere=(
            ("ckp = self.model.module.state_dict()", "state.save_load's own erratum"),
            ("if model.gpu_id == 0 :", "state.save_load's own erratum"),
            ("DataLoader(dataset,batch_size=batch_size,shuffle=False,sampleer=", "dist.setup's own erratum"),
        ),
    ),
    "004#33": Entry(
        "dist.setup",
        "import torch.multiprocessing as mp # a wrapper around python's native multiprocessing",
        False,
        "run by torchrun (LOCAL_RANK from its environment), nccl",
    ),
}

# The claim each snippet shows, where its case declares one (read from the case modules'
# `claims=(...)`); a snippet showing several claims, or none the case declares, names none.
_CLAIMS = {
    "000#2": "per_step_head",
    "001#2": "per_step_head",
    "000#3": "data_cuts_graph",
    "001#3": "data_cuts_graph",
    "000#6": "averages_gradients",
    "001#8": "averages_gradients",
    "000#7": "process_group_steps",
    "001#9": "process_group_steps",
    "000#8": "local_rank",
    "001#10": "local_rank",
    "000#11": "image_graph_embedding",
    "001#13": "image_graph_embedding",
    "001#6": "freezing",
    "001#16": "freezing",
    "001#17": "freezing",
    "001#18": "apply_init",
    "001#19": "apply_init",
    "001#24": "add_param_group",
    "001#25": "add_param_group",
    "001#20": "batchnorm",
    "001#21": "batchnorm",
    "001#22": "batchnorm",
    "001#23": "unfold_shape",
    "001#26": "raises",
    "001#27": "raises",
    "001#29": "resume",
    "001#33": "eye_index",
    "002#0": "data_iter_epoch",
    "002#4": "allreduce_sums",
    "002#8": "trains_like_one_device",
    "003#0": "dropout",
    "003#1": "index_none",
    "003#2": "round_trip",
    "003#7": "nested",
    "003#8": "trains_like_fp32",
    "003#10": "state_machine",
    "003#11": "state_machine",
    "003#12": "yolov5_grouping",
    "003#15": "sequential_read",
    "003#16": "idx_offsets",
    "003#17": "idx_offsets",
    "003#20": "indexed_random_read",
    "003#22": "irheader",
    "004#0": "one_chart",
    "004#4": "batch_is_list",
    "004#6": "outer_examples",
    "004#7": "layer_norm",
    "004#8": "n_layers",
    "004#10": "masks",
    "004#11": "masked_attention",
    "004#15": "scatter_one_hot",
    "004#16": "scatter_formula",
    "004#18": "snippet",
    "004#20": "is_contiguous",
    "004#23": "accumulation",
    "004#30": "nan_reductions",
    "004#32": "mp_spawn",
}
SNIPPETS.update({loc: replace(SNIPPETS[loc], claim=claim) for loc, claim in _CLAIMS.items()})
