from ._Abort import *
from ._Annotate import *
from ._Start import *
from ._Status import *
from ._Stop import *
