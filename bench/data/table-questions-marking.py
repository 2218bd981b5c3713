import json,random
Q=[
("en","maximabook-19-Sept-2004.pdf",43,"In Maxima, which function computes the hyperbolic arc cotangent?","acoth",["acoth"],["coth","Hyperbolic Cotangent","acoth","Hyperbolic Arc Cotangent"]),
("en","maximabook-19-Sept-2004.pdf",25,"In emaxima mode, which key kills the current Maxima core?","C-c C-k",["C-k"],["C-c C-k","Kill the current Maxima core - this will lose all data entered into the maxima system up until this point by other cells."]),
("en","maximabook-19-Sept-2004.pdf",13,"In the Emacs maxima mode, which key sends the region to the Maxima process?","C-c C-r",["C-r"],["C-cC-r","Send the region to the Maxima process."]),
("en","maximabook-19-Sept-2004.pdf",25,"In AUCTeX, which key inserts an environment?","C-c C-e",["C-e"],["C-c C-e","Insert an environment."]),
("en","debian-faq.en.pdf",44,"Which apt command replaces apt-get dist-upgrade?","apt full-upgrade",["full-upgrade"],["apt-get dist-upgrade","->","apt full-upgrade"]),
("en","debian-faq.en.pdf",44,"What is the apt equivalent of apt-cache policy package?","apt list -a package",["list -a"],["apt-cache policy package","->","apt list -a package"]),
("en","chemformula-manual.pdf",11,"Which aliases does chemformula's dotted bond type have?","semisingle",["semisingle"],["dotted","","semisingle"]),
("en","chemformula-manual.pdf",11,"In chemformula, what is the alias of the bond type co>?","coordright",["coordright"],["co>","","coordright"]),
("en","txfontsdoc.pdf",7,"Which txfonts command typesets an upright Greek alpha?","\\alphaup",["alphaup"],["α \\alphaup","β \\betaup","γ \\gammaup"]),
("zh","lshort-zh-cn.pdf",114,"\\tabcolsep 的默认值是多少？","6pt",["6pt"],["\\tabcolsep","6pt","tabular 环境的表格项前后的间距"]),
("zh","lshort-zh-cn.pdf",114,"\\contentsname 的默认值是什么？","Contents",["Contents"],["\\contentsname","Contents","\\tableofcontents 命令生成的目录标题"]),
("zh","lshort-zh-cn.pdf",97,"hyperref 的 colorlinks 选项默认值是什么？","false",["false"],["colorlinks=⟨true|false⟩","false","设置为 true 为链接文字带颜色，反之加上带颜色的边框"]),
("zh","lshort-zh-cn.pdf",74,"\\footnotesize 在 12pt 选项下是多大的字号？","10pt",["10pt"],["\\footnotesize","8pt","9pt","10pt"]),
("zh","lshort-zh-cn.pdf",47,"浮动体的位置参数 p 表示什么？","单独成页",["单独成页"],["p","单独成页"]),
("zh","lshort-zh-cn.pdf",21,"XeTeX 引擎对应的 LaTeX 格式命令是什么？","xelatex",["xelatex"],["XƎTEX 引擎","PDF","xetex","xelatex"]),
("zh","lshort-zh-cn.pdf",45,"\\includegraphics 的哪个参数可以把图片逆时针旋转？","angle",["angle"],["angle=⟨angle⟩","将图片逆时针旋转 ⟨angle⟩ 度"]),
("zh","lshort-zh-cn.pdf",112,"计数器格式命令 \\alph 的范围限制是什么？","限 0–26",["26"],["\\alph","小写字母","限 0–26"]),
("zh","lshort-zh-cn.pdf",109,"xparse 的参数格式 s 表示什么？","可选的星号 *",["星号"],["s","可选的星号 *"]),
]
out=[]
for i,(lang,f,p,q,a,m,row) in enumerate(Q):
    out.append({"id":f"TQ{i+1:02d}","lang":lang,"file":f,"pages":[p],"question":q,"answer":a,"must_contain":m,"kind":"table","row":row})
with open('/work/wt-tables/bench/data/table_questions.jsonl','w') as fh:
    for o in out: fh.write(json.dumps(o,ensure_ascii=False)+"\n")
rng=random.Random(49); tune=[];held=[]
for lang in ["en","zh"]:
    g=sorted(o['id'] for o in out if o['lang']==lang); rng.shuffle(g); k=(len(g)+1)//2; tune+=g[:k]; held+=g[k:]
json.dump({"about":"Each table question of bench/data/table_questions.jsonl in the tuning or the held-out half, drawn once with Python's random.Random(49): grouped by language (en, zh), each group's ids sorted, shuffled, and the first half (rounded up) taken for tuning.","seed":49,"tune":sorted(tune),"held":sorted(held)},open('/work/wt-tables/bench/data/table_questions_split.json','w'),ensure_ascii=False,indent=1)
print(len(out),len(tune),len(held))
