"""Every code snippet of the notes → the catalogue ID it shows, or "context".

Keyed by a stable locator, the note file's prefix and the snippet's index in that file
("003#7": the eighth fenced block of 003_*.txt), with the snippet's first non-blank line as a
guard: an edited note moves or changes snippets, and `tests/unit/cases/_lib/test_snippets.py` then names every
entry that no longer matches (and every snippet without an entry).

``runs``: whether it is run on a CPU, in the note's namespace (the names the notes defined before
it, and `snippets.SEED_IMPORTS`); ``reason`` says why not where it is not. A snippet is not run
when it needs a GPU, a multi-process or distributed launch, a file, dataset, download or package
it does not provide, or names the notes never define (a model, the data): those names are its
``needs`` and no stand-in is supplied. ``needs`` is also what the static reading of a snippet
(run or not) takes as given from outside the notes; any other name it uses that is defined
nowhere before it is an erratum (a slip, a lost import). ``requires``: packages a runnable snippet
needs (skipped, with the reason, where one is not installed). ``claim``: the claim of the case it
shows, where the case module declares one (`Case.claims`); None otherwise.
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
    needs: tuple[str, ...] = ()
    claim: str | None = None
    requires: tuple[str, ...] = ()

    def __post_init__(self):
        if not self.runs and not self.reason:
            raise ValueError(f"{self.first!r}: a snippet that is not run says why")


GUARD_PREFIX = 40  # a guard this long may be the start of a longer first line (a JSON literal, a command)


def guard_matches(entry: Entry, first_line: str) -> bool:
    """The entry still names this snippet: its guard is the snippet's first non-blank line."""
    if entry.first == first_line:
        return True
    return len(entry.first) >= GUARD_PREFIX and first_line.startswith(entry.first)


NOT_COMPILED = "does not compile (its erratum)"
NOT_PYTHON = "not Python: counted, never run"

# The RNN, Multi-GPU, dataset, tensorboard, STN and distance snippets of 000 reappear in 001.
_RNN_NEEDS = ("rnn", "x")  # the notes' model and its input: never defined
_DIST_TCP_NEEDS = ("argparse", "torchvision", "download", "transform", "batch_size", "Net")
_DIST_ENV_NEEDS = ("torchvision", "download", "transform", "batch_size", "Net")
_TB_NEEDS = ("torchvision", "images", "net", "trainset", "classes")
_SHARED = {
    "rnn_constants": Entry("rnn.timestep_loop", "TIME_STEP = 28", True),
    "rnn_lstm": Entry(
        "rnn.timestep_loop", "self.rnn = nn.LSTM(", False, NOT_COMPILED, needs=("self", "x", "output_size")
    ),
    "rnn_forward": Entry("rnn.timestep_loop", "# 网络相同", True, needs=("self",)),
    "rnn_train": Entry(
        "rnn.hidden_detach",
        "h_state = None      # for initial hidden state",
        False,
        "needs `rnn` (the notes' model) and `x` (its input), never defined in the notes",
        needs=_RNN_NEEDS,
    ),
    "binarized": Entry("autograd.custom_function", "class BinarizedF(Function):", True),
    "cuda1": Entry(
        CONTEXT,
        'cuda1 = torch.device("cuda:1")',
        False,
        "needs a second CUDA device and `data`, never defined in the notes",
        needs=("data",),
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
        needs=_DIST_TCP_NEEDS,
    ),
    "dist_env": Entry(
        "dist.setup",
        "import torch.distributed as dist",
        False,
        "a distributed launch (nccl, env:// from torch.distributed.launch, --local_rank) over CIFAR-10 "
        "(torchvision, a download); `Net`, `transform`, `batch_size` are elided (# ......)",
        needs=_DIST_ENV_NEEDS,
    ),
    "dist_launch_cmd": Entry(
        "dist.setup",
        "python -m torch.distributed.launch --nproc_per_node=2 --nnodes=3 --node_rank=0 "
        '--master_addr="192.168.1.201" --master_port=23456 env_init.py',
        False,
        NOT_PYTHON,
    ),
    "mydataset": Entry(
        "data.loading", "class MyDataSet(Dataset):", False, NOT_COMPILED, needs=("pd", "io", "image", "label")
    ),
    "tensorboard_vis": Entry(
        "misc.tensorboard",
        "from torch.utils.tensorboard import SummmaryWritter",
        False,
        "needs torchvision and `images`, `net`, `trainset`, `classes` (a dataset and a model), never defined",
        needs=_TB_NEEDS,
    ),
    "stn": Entry(
        "nn.grid_sample",
        "# x 为输入数据",
        False,
        "needs `theta` (a localisation net's output) and `x` (the input), never defined",
        needs=("theta", "x"),
        claim="stn",
    ),
    "distance": Entry(
        "distance.pairwise",
        "# des_tar , des_cur 代表两帧的描述子 N*256",
        False,
        "needs `des_tar` and `des_cur` (two frames' descriptors), never defined; the case runs its lines "
        "on its own descriptors",
        needs=("des_tar", "des_cur"),
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
    "000#12": _S["stn"],
    "000#13": _S["distance"],
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
        "needs `net` (a model with a `conv2` layer), never defined",
        needs=("net",),
    ),
    "001#6": Entry(
        "optim.param_groups",
        "model = torchvision.models.resnet18(pretrained=True)",
        False,
        "needs torchvision and a download of pretrained weights (network)",
        needs=("torchvision",),
    ),
    "001#7": _S["cuda1"],
    "001#8": _S["dist_spawn"],
    "001#9": _S["dist_tcp"],
    "001#10": _S["dist_env"],
    "001#11": _S["dist_launch_cmd"],
    "001#12": _S["mydataset"],
    "001#13": _S["tensorboard_vis"],
    "001#14": Entry(CONTEXT, "class Net(nn.Module):", True),
    "001#15": Entry("clip.grad_norm", "def clip_grad_norm_(parameters, max_norm, norm_type=2):", True),
    "001#16": Entry(
        "optim.param_groups",
        "# freeze those parameters",
        False,
        "needs `model`: the notes' only one is 001#6's pretrained resnet18 (torchvision, a download)",
        needs=("model",),
    ),
    "001#17": Entry(
        "optim.param_groups",
        "# freeze fc2 layer weight",
        False,
        "needs `net` with an `fc2` layer; the notes' only `net` before it (001#14) has none",
        needs=("net",),
    ),
    "001#18": Entry("optim.param_groups", "class Model(nn.Module):", True),
    "001#19": Entry("optim.param_groups", "# given a function, and applies it to all submodules", True),
    "001#20": Entry("train.modes", "class _NormBase(Module):", True),
    "001#21": Entry("train.modes", "def reset_running_stats(self) -> None:", False, NOT_COMPILED),
    "001#22": Entry("train.modes", "def _check_input_dim(self, input):", False, NOT_COMPILED),
    "001#23": Entry("conv.im2col", "unfold = nn.Unfold(kernel_size=(2,3))", True),
    "001#24": Entry("optim.param_groups", "[", False, NOT_PYTHON),
    "001#25": Entry("optim.param_groups", "def add_param_group(self, param_group):", True),
    "001#26": Entry(
        "optim.scheduler_resume",
        "KeyError: \"param 'initial_lr' is not specified in param_groups[0] when resuming an optimizer\"",
        False,
        NOT_PYTHON,
    ),
    "001#27": Entry("optim.scheduler_resume", "class _LRScheduler(object):", True),
    "001#28": Entry("optim.scheduler_resume", "def get_lr(self):", True),
    "001#29": Entry(
        "optim.scheduler_resume",
        "chkpt = {'epoch': epoch,",
        False,
        "needs yolov5's training-loop variables (`epoch`, `best_fitness`, `f`, `model`, `final_epoch`, "
        "`optimizer`), never defined",
        needs=("epoch", "best_fitness", "f", "model", "final_epoch", "optimizer"),
    ),
    "001#30": Entry(
        "nn.grid_sample",
        "torch.nn.functional.grid_sample(input, grid, mode='bilinear', padding_mode='zeros', "
        "align_corners=None)",
        False,
        NOT_PYTHON,
    ),
    "001#31": _S["stn"],
    "001#32": _S["distance"],
    "001#33": Entry(
        "onehot.encode",
        "# label (B, )",
        False,
        "needs `num_class` and `label`, never defined",
        needs=("num_class", "label"),
    ),
    # ---- 002 -----------------------------------------------------------------------------------
    "002#0": Entry("data.loading", "def data_iter(batch_size, features, labels):", True),
    "002#1": Entry(
        CONTEXT,
        "from torchsummary import summary",
        False,
        "needs torchsummary and torchvision (third-party packages, not dependencies of the suite)",
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
    # d2l's `loss`, `lenet` and `d2l` itself come from the book's earlier chapters, not the notes.
    "002#8": Entry(
        "parallel.manual_dp",
        "def train_batch(X, y, device_params, devices, lr):",
        True,
        needs=("loss", "lenet", "d2l"),
    ),
    "002#9": Entry(
        "parallel.manual_dp", "def train(num_gpus, batch_size, lr):", True, needs=("d2l", "params", "lenet")
    ),
    "002#10": Entry("parallel.dp_vs_ddp", "def train(net, num_gpus, batch_size, lr):", True, needs=("d2l",)),
    # ---- 003 -----------------------------------------------------------------------------------
    "003#0": Entry("train.modes", "model = nn.Sequential(nn.Dropout(0.3))", True),
    "003#1": Entry("shape.ops", "x = torch.tensor([1, 2, 3])", True),
    "003#2": Entry("state.save_load", "class MyModule(torch.nn.Module):", True),
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
    "003#5": Entry(
        "dist.setup",
        "from __future__ import absolute_import, division, print_function, unicode_literals",
        False,
        "torch 1.6's launcher itself: run, it starts training processes from command-line arguments",
    ),
    "003#6": Entry(
        "jit.script_trace",
        "# my_model是一个torch.nn.Module子类的对象",
        False,
        "needs `input_example` and `another_input`, never defined",
        needs=("input_example", "another_input"),
    ),
    "003#7": Entry("jit.script_trace", "class MyDecisionGate(torch.nn.Module):", True),
    "003#8": Entry(
        "precision.amp",
        "use_amp = True",
        False,
        "needs `model`, `net`, `data`, `targets`, `epochs`, `loss_fn` (a model and a dataset), never defined",
        needs=("model", "net", "data", "targets", "epochs", "loss_fn", "max_norm"),
    ),
    "003#9": Entry(
        "precision.amp", "scaler = torch.cuda.amp.GradScaler()", False, "needs CUDA (device='cuda:0')"
    ),
    "003#10": Entry("precision.amp", "class OptState(Enum):", True),
    "003#11": Entry("precision.amp", "__init__:    -> READY", False, NOT_PYTHON),
    "003#12": Entry(
        "optim.param_groups",
        "# model is a instanse of torch.nn.Module",
        False,
        "needs `model`, and yolov5's `opt` (its options) and `hyp` (hyper-parameters), never defined",
        needs=("model", "opt", "hyp"),
    ),
    "003#13": Entry("data.recordio", "<dataname>.rec", False, NOT_PYTHON),
    "003#14": Entry("data.recordio", "<第一条数据的byte数><第一条数据的实际内容>", False, NOT_PYTHON),
    "003#15": Entry(
        "data.recordio",
        "record = mx.recordio.MXRecordIO('tmp.rec', 'w')",
        False,
        "needs mxnet (`mx`), not a dependency of the suite (the case reads and writes the format itself)",
        needs=("mx",),
    ),
    "003#16": Entry("data.recordio", "data.idx", False, NOT_PYTHON),
    "003#17": Entry("data.recordio", "1\t0", False, NOT_PYTHON),
    "003#18": Entry(
        "data.recordio",
        "record = mx.recordio.MXRecordIO(\"data.rec\", 'r')",
        False,
        "needs mxnet (`mx`) and a data.rec file it does not create",
        needs=("mx",),
    ),
    "003#19": Entry("data.recordio", "8byte 5760byte", False, NOT_PYTHON),
    "003#20": Entry(
        "data.recordio",
        "for i in range(5):",
        False,
        "needs `record` opened for indexed writing (never done in the notes) and mxnet (`mx`)",
        needs=("mx", "record"),
    ),
    "003#21": Entry("data.recordio", "pack(header, s) -> s", False, NOT_COMPILED),
    "003#22": Entry("data.recordio", "IRHeader = namedtuple('HEADER', ['flag', 'label', 'id', 'id2'])", True),
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
        "needs `dataloader`, never defined",
        needs=("dataloader",),
    ),
    "004#5": Entry(CONTEXT, "a[0::2] //", False, NOT_COMPILED),
    "004#6": Entry("broadcast.rules", ">>> a = np.array([0.0, 10.0, 20.0, 30.0])", True),
    "004#7": Entry("layernorm.manual", "# step by step LayerNorm", False, NOT_COMPILED),
    "004#8": Entry("nn.containers", "class net1(nn.Module):#ModuleList", False, NOT_COMPILED),
    "004#9": Entry("onehot.encode", "# Normal embedding", False, NOT_COMPILED),
    "004#10": Entry("attention.masked", "def subsequent_mask(size):", True),
    "004#11": Entry("attention.masked", "# tensor.masked_fill(mask,value)", False, NOT_COMPILED),
    "004#12": Entry(CONTEXT, "a = [1,2,3]", True),
    "004#13": Entry(CONTEXT, "conda update -n base conda        //update最新版本的conda", False, NOT_PYTHON),
    "004#14": Entry(CONTEXT, "sys.argv //表示命令行参数的数组", True),
    "004#15": Entry("onehot.encode", "label = torch.tensor([0,1,0,2,3,2]).view(len(label),-1)", True),
    "004#16": Entry(
        "onehot.encode",
        "self[index[i][j][k]][j][k] = src[i][j][k]  # if dim == 0",
        False,
        "scatter_'s index formula, not code: `self`, `index`, `src`, `i`, `j`, `k` stand for any tensors "
        "and indices",
        needs=("self", "index", "src", "i", "j", "k"),
    ),
    "004#17": Entry(CONTEXT, 'dir = "/Users/sirius/Desktop" # 也可以是 /Users/sirius/Desktop/', True),
    "004#18": Entry("layout.contiguous", "a = torch.range(12).reshape(3,4)", True),
    "004#19": Entry(
        "layout.contiguous", "int THTensor(isContiguous)(const THTensor *self)", False, NOT_PYTHON
    ),
    "004#20": Entry("layout.contiguous", "def isContiguous(tensor):", False, NOT_COMPILED),
    "004#21": Entry(
        CONTEXT,
        'x = re.match(r"^([\\w\\.\\-]+)\\s+.+\\s+([0-9]+)\\s+([0-9e\\-\\.]+)\\s+[0-9]+$",s)',
        False,
        "needs `s` (a line of some data file), never defined",
        needs=("s",),
    ),
    "004#22": Entry(
        CONTEXT, 'file = "./chain_set.json"', False, "reads ./chain_set.json, a file it does not create"
    ),
    "004#23": Entry(
        "train.grad_accumulation",
        "def MinibatchAccumulation(traindata,labels,epochoptimizer,criterion,net):",
        True,
    ),
    "004#24": Entry(CONTEXT, '{"test": ["1bct.A", "1bf0.A", "1bjx.A", "1cyu.A", "1ehs.A", "1faf.A",', True),
    "004#25": Entry(CONTEXT, 'file = ""', False, "opens a file (named '') it does not create"),
    "004#26": Entry(
        CONTEXT, '{"cath_nodes": {"2fyz.A": ["1.20.5"], "1v5j.A": ["2.60.40"],', False, NOT_COMPILED
    ),
    "004#27": Entry(
        CONTEXT, 'file1 = "./chain_set.jsonl"', False, "reads ./chain_set.jsonl, a file it does not create"
    ),
    "004#28": Entry(CONTEXT, "from argparse import ArgumentParser", False, NOT_COMPILED),
    "004#29": Entry(
        CONTEXT,
        'parser.add_argument("square", help="display a square of a given number",type=int)',
        False,
        "needs `parser`, which only 004#28 defines, and 004#28 does not compile",
        needs=("parser",),
    ),
    "004#30": Entry("misc.sampling_ops", "nansum()", False, NOT_COMPILED),
    "004#31": Entry(
        "data.loading", "DataLoader(dataset, batch_size=1, shuffle=False, sampler=None,", False, NOT_COMPILED
    ),
    "004#32": Entry(
        "dist.setup",
        "import torch.multiprocessing as mp # a wrapper around python's native multiprocessing",
        False,
        "a distributed launch (mp.spawn, nccl) of a model and dataset never defined",
        needs=("model", "dataset", "batch_size", "world_size"),
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
